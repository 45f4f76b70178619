//! Borrowed views of the requests made on every message and keystroke (Classify,
//! Execute, Complete): the fields the rules read, left as slices of the received bytes, with no
//! allocation and no copy. prost's decode of the same request costs an allocation, a
//! copy and a UTF-8 check per string, and a drop afterwards: most of what Execute spent
//! above the floor (BENCHMARKS.md, issue 50).
//!
//! A view is made only of a request that prost decodes to the same values: every string
//! UTF-8, every known field of its wire type, repeated fields appended and repeated
//! messages merged as prost merges them. Anything else (an unknown field, a field this
//! reader does not follow, such as metadata that is not empty or a `Part` holding data,
//! or bytes that are not protobuf at all) makes no view: the caller decodes with prost,
//! which gives the same values or the same error. So a view changes the cost of a
//! request, never its answer; the tests hold both readers to that on generated and
//! mutated requests.
//!
//! Each view can also be taken of a decoded request (`of`), so one implementation of a
//! method serves both the server's own path and tonic's generic one.

use crate::pb;

/// What Classify reads of a `ClassifyRequest`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClassifyView<'a> {
    /// The message, when one was sent.
    pub message: Option<MessageView<'a>>,
}

/// What Execute reads of an `ExecuteRequest`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExecuteView<'a> {
    /// The message, when one was sent.
    pub message: Option<MessageView<'a>>,
    /// The task, when one was sent.
    pub task: Option<TaskView<'a>>,
    /// The sender, when one was sent.
    pub sender: Option<SenderView<'a>>,
    /// `event_json_format` (deprecated), unchecked.
    pub event_json_format: i32,
    /// `attempt`.
    pub attempt: u32,
    /// `event_forms`, unchecked.
    pub event_forms: Vec<i32>,
    /// `event_metadata`.
    pub event_metadata: bool,
    /// `accepts_prompt`.
    pub accepts_prompt: bool,
}

/// What Complete reads of a `CompleteRequest`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompleteView<'a> {
    /// What the user has typed.
    pub text: &'a str,
    /// The task, when one was sent.
    pub task: Option<TaskView<'a>>,
    /// The sender, when one was sent.
    pub sender: Option<SenderView<'a>>,
    /// `limit`.
    pub limit: u32,
}

/// What the rules read of an A2A `Message`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MessageView<'a> {
    /// `message_id`.
    pub message_id: &'a str,
    /// `context_id`.
    pub context_id: &'a str,
    /// The text of its one part, when it has exactly one part and that part is text:
    /// the only message that can be a command.
    pub single_text: Option<&'a str>,
}

/// A `TaskSnapshot`'s fields, unchecked (`rules::task` checks them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskView<'a> {
    /// `id`.
    pub id: &'a str,
    /// `context_id`.
    pub context_id: &'a str,
    /// `name`.
    pub name: &'a str,
    /// `state`.
    pub state: i32,
    /// `sub_state`.
    pub sub_state: i32,
    /// Whether `settings` was sent (even empty).
    pub settings: bool,
    /// `settings.model`, when set.
    pub model: Option<&'a str>,
    /// `settings.effort`, when set.
    pub effort: Option<&'a str>,
    /// `plan`'s steps done and total, when a plan was sent.
    pub plan: Option<(u32, u32)>,
    /// `sub_tasks`: each one's id and state.
    pub sub_tasks: Vec<(&'a str, i32)>,
}

/// A `Sender`'s fields, unchecked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SenderView<'a> {
    /// `id`.
    pub id: &'a str,
    /// `role`.
    pub role: i32,
}

impl<'a> ClassifyView<'a> {
    /// The view of `bytes`, an encoded `ClassifyRequest`, or `None` when prost must
    /// decode it (see the module's comment).
    pub fn parse(bytes: &'a [u8]) -> Option<Self> {
        let mut message = None;
        let mut fields = Fields(bytes);
        while let Some((number, value)) = fields.next()? {
            match (number, value) {
                (1, Value::Bytes(b)) => message.get_or_insert_with(Parts::default).merge(b)?,
                _ => return None,
            }
        }
        Some(Self {
            message: message.map(Parts::view),
        })
    }

    /// The view of a decoded request.
    pub fn of(request: &'a pb::ClassifyRequest) -> Self {
        Self {
            message: request.message.as_ref().map(MessageView::of),
        }
    }
}

impl<'a> ExecuteView<'a> {
    /// The view of `bytes`, an encoded `ExecuteRequest`, or `None` when prost must
    /// decode it (see the module's comment).
    pub fn parse(bytes: &'a [u8]) -> Option<Self> {
        let mut view = Self::default();
        let mut message = None;
        let mut fields = Fields(bytes);
        while let Some((number, value)) = fields.next()? {
            match (number, value) {
                (1, Value::Bytes(b)) => message.get_or_insert_with(Parts::default).merge(b)?,
                (2, Value::Bytes(b)) => view.task.get_or_insert_with(TaskView::default).merge(b)?,
                (3, Value::Bytes(b)) => view
                    .sender
                    .get_or_insert_with(SenderView::default)
                    .merge(b)?,
                (4, Value::Varint(v)) => view.event_json_format = v as i32,
                (5, Value::Varint(v)) => view.attempt = v as u32,
                (6, Value::Varint(v)) => view.event_forms.push(v as i32),
                (6, Value::Bytes(packed)) => {
                    let mut packed = packed;
                    while !packed.is_empty() {
                        view.event_forms.push(varint(&mut packed)? as i32);
                    }
                }
                (7, Value::Varint(v)) => view.event_metadata = v != 0,
                (8, Value::Varint(v)) => view.accepts_prompt = v != 0,
                _ => return None,
            }
        }
        view.message = message.map(Parts::view);
        Some(view)
    }

    /// The view of a decoded request.
    pub fn of(request: &'a pb::ExecuteRequest) -> Self {
        #[allow(deprecated)]
        let event_json_format = request.event_json_format;
        Self {
            message: request.message.as_ref().map(MessageView::of),
            task: request.task.as_ref().map(TaskView::of),
            sender: request.sender.as_ref().map(SenderView::of),
            event_json_format,
            attempt: request.attempt,
            event_forms: request.event_forms.clone(),
            event_metadata: request.event_metadata,
            accepts_prompt: request.accepts_prompt,
        }
    }
}

impl<'a> CompleteView<'a> {
    /// The view of `bytes`, an encoded `CompleteRequest`, or `None` when prost must
    /// decode it (see the module's comment).
    pub fn parse(bytes: &'a [u8]) -> Option<Self> {
        let mut view = Self::default();
        let mut fields = Fields(bytes);
        while let Some((number, value)) = fields.next()? {
            match (number, value) {
                (1, Value::Bytes(b)) => view.text = text(b)?,
                (2, Value::Bytes(b)) => view.task.get_or_insert_with(TaskView::default).merge(b)?,
                (3, Value::Bytes(b)) => view
                    .sender
                    .get_or_insert_with(SenderView::default)
                    .merge(b)?,
                (4, Value::Varint(v)) => view.limit = v as u32,
                _ => return None,
            }
        }
        Some(view)
    }

    /// The view of a decoded request.
    pub fn of(request: &'a pb::CompleteRequest) -> Self {
        Self {
            text: &request.text,
            task: request.task.as_ref().map(TaskView::of),
            sender: request.sender.as_ref().map(SenderView::of),
            limit: request.limit,
        }
    }
}

impl<'a> MessageView<'a> {
    /// The view of a decoded message.
    pub fn of(message: &'a pb::Message) -> Self {
        let single_text = match message.parts.as_slice() {
            [pb::Part {
                content: Some(pb::part::Content::Text(text)),
                ..
            }] => Some(text.as_str()),
            _ => None,
        };
        Self {
            message_id: &message.message_id,
            context_id: &message.context_id,
            single_text,
        }
    }
}

impl<'a> TaskView<'a> {
    /// The view of a decoded snapshot.
    pub fn of(task: &'a pb::TaskSnapshot) -> Self {
        let settings = task.settings.as_ref();
        Self {
            id: &task.id,
            context_id: &task.context_id,
            name: &task.name,
            state: task.state,
            sub_state: task.sub_state,
            settings: settings.is_some(),
            model: settings.and_then(|s| s.model.as_deref()),
            effort: settings.and_then(|s| s.effort.as_deref()),
            plan: task.plan.as_ref().map(|p| (p.steps_done, p.steps_total)),
            sub_tasks: task
                .sub_tasks
                .iter()
                .map(|s| (s.id.as_str(), s.state))
                .collect(),
        }
    }

    /// The snapshot these fields are of, owned (for a handler).
    pub fn to_proto(&self) -> pb::TaskSnapshot {
        pb::TaskSnapshot {
            id: self.id.to_owned(),
            context_id: self.context_id.to_owned(),
            name: self.name.to_owned(),
            state: self.state,
            sub_state: self.sub_state,
            settings: self.settings.then(|| pb::TaskSettings {
                model: self.model.map(str::to_owned),
                effort: self.effort.map(str::to_owned),
            }),
            plan: self.plan.map(|(steps_done, steps_total)| pb::PlanProgress {
                steps_done,
                steps_total,
            }),
            sub_tasks: self
                .sub_tasks
                .iter()
                .map(|&(id, state)| pb::SubTaskSnapshot {
                    id: id.to_owned(),
                    state,
                })
                .collect(),
        }
    }

    /// Reads one occurrence of a `TaskSnapshot` into this one (a second occurrence
    /// merges into the first, as prost merges it).
    fn merge(&mut self, bytes: &'a [u8]) -> Option<()> {
        let mut fields = Fields(bytes);
        while let Some((number, value)) = fields.next()? {
            match (number, value) {
                (1, Value::Bytes(b)) => self.id = text(b)?,
                (2, Value::Bytes(b)) => self.context_id = text(b)?,
                (3, Value::Bytes(b)) => self.name = text(b)?,
                (4, Value::Varint(v)) => self.state = v as i32,
                (5, Value::Varint(v)) => self.sub_state = v as i32,
                (6, Value::Bytes(b)) => self.merge_settings(b)?,
                (7, Value::Bytes(b)) => self.merge_plan(b)?,
                (8, Value::Bytes(b)) => self.sub_tasks.push(sub_task(b)?),
                _ => return None,
            }
        }
        Some(())
    }

    /// `TaskSettings`: two optional strings.
    fn merge_settings(&mut self, bytes: &'a [u8]) -> Option<()> {
        self.settings = true;
        let mut fields = Fields(bytes);
        while let Some((number, value)) = fields.next()? {
            match (number, value) {
                (1, Value::Bytes(b)) => self.model = Some(text(b)?),
                (2, Value::Bytes(b)) => self.effort = Some(text(b)?),
                _ => return None,
            }
        }
        Some(())
    }

    /// `PlanProgress`: present once sent, even empty.
    fn merge_plan(&mut self, bytes: &'a [u8]) -> Option<()> {
        let plan = self.plan.get_or_insert((0, 0));
        let mut fields = Fields(bytes);
        while let Some((number, value)) = fields.next()? {
            match (number, value) {
                (1, Value::Varint(v)) => plan.0 = v as u32,
                (2, Value::Varint(v)) => plan.1 = v as u32,
                _ => return None,
            }
        }
        Some(())
    }
}

/// A `SubTaskSnapshot`: its id and state.
fn sub_task(bytes: &[u8]) -> Option<(&str, i32)> {
    let mut sub_task = ("", 0);
    let mut fields = Fields(bytes);
    while let Some((number, value)) = fields.next()? {
        match (number, value) {
            (1, Value::Bytes(b)) => sub_task.0 = text(b)?,
            (2, Value::Varint(v)) => sub_task.1 = v as i32,
            _ => return None,
        }
    }
    Some(sub_task)
}

impl<'a> SenderView<'a> {
    /// The view of a decoded sender.
    pub fn of(sender: &'a pb::Sender) -> Self {
        Self {
            id: &sender.id,
            role: sender.role,
        }
    }

    /// The sender, owned (for a handler).
    pub fn to_proto(self) -> pb::Sender {
        pb::Sender {
            id: self.id.to_owned(),
            role: self.role,
        }
    }

    /// Reads one occurrence of a `Sender` into this one.
    fn merge(&mut self, bytes: &'a [u8]) -> Option<()> {
        let mut fields = Fields(bytes);
        while let Some((number, value)) = fields.next()? {
            match (number, value) {
                (1, Value::Bytes(b)) => self.id = text(b)?,
                (2, Value::Varint(v)) => self.role = v as i32,
                _ => return None,
            }
        }
        Some(())
    }
}

/// A message being read: its strings, and its parts counted, the first one's text kept.
#[derive(Default)]
struct Parts<'a> {
    message_id: &'a str,
    context_id: &'a str,
    parts: usize,
    first_text: Option<&'a str>,
}

impl<'a> Parts<'a> {
    /// Reads one occurrence of a `Message` into this one.
    fn merge(&mut self, bytes: &'a [u8]) -> Option<()> {
        let mut fields = Fields(bytes);
        while let Some((number, value)) = fields.next()? {
            match (number, value) {
                (1, Value::Bytes(b)) => self.message_id = text(b)?,
                (2, Value::Bytes(b)) => self.context_id = text(b)?,
                (3 | 7 | 8, Value::Bytes(b)) => {
                    text(b)?;
                }
                (4, Value::Varint(_)) => {}
                (5, Value::Bytes(b)) => {
                    let part_text = part(b)?;
                    if self.parts == 0 {
                        self.first_text = part_text;
                    }
                    self.parts += 1;
                }
                // Metadata is followed only when empty (an empty `Struct`).
                (6, Value::Bytes([])) => {}
                _ => return None,
            }
        }
        Some(())
    }

    fn view(self) -> MessageView<'a> {
        MessageView {
            message_id: self.message_id,
            context_id: self.context_id,
            single_text: self.first_text.filter(|_| self.parts == 1),
        }
    }
}

/// Reads a `Part`: its text when its content is text. Its content is a `oneof`, so the
/// last content field sent is the one it holds.
fn part(bytes: &[u8]) -> Option<Option<&str>> {
    let mut content = None;
    let mut fields = Fields(bytes);
    while let Some((number, value)) = fields.next()? {
        match (number, value) {
            (1, Value::Bytes(b)) => content = Some(text(b)?),
            (3, Value::Bytes(b)) => {
                text(b)?;
                content = None;
            }
            (2, Value::Bytes(_)) => content = None,
            (6 | 7, Value::Bytes(b)) => {
                text(b)?;
            }
            (5, Value::Bytes([])) => {}
            _ => return None,
        }
    }
    Some(content)
}

/// A string field's value: UTF-8, or no view (prost says what is wrong).
#[inline]
fn text(bytes: &[u8]) -> Option<&str> {
    // Most of a request's strings are short ASCII ids, for which the general check's
    // setup costs more than the check.
    if bytes.is_ascii() {
        // SAFETY: ASCII is UTF-8.
        return Some(unsafe { std::str::from_utf8_unchecked(bytes) });
    }
    std::str::from_utf8(bytes).ok()
}

/// A field's value as the wire carries it: what the views follow.
#[derive(Clone, Copy)]
enum Value<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

/// The fields of one message, in wire order.
struct Fields<'a>(&'a [u8]);

impl<'a> Fields<'a> {
    /// The next field: `Some(None)` at the end; `None` for what prost refuses and for
    /// the wire types no view follows (fixed-width fields and groups: none of the
    /// fields read here has them, so prost either skips them as unknown or refuses
    /// them, and either way it decodes the request instead).
    #[allow(clippy::option_option)]
    #[inline]
    fn next(&mut self) -> Option<Option<(u32, Value<'a>)>> {
        if self.0.is_empty() {
            return Some(None);
        }
        let key = varint(&mut self.0)?;
        let key = u32::try_from(key).ok()?;
        let number = key >> 3;
        if number == 0 {
            return None;
        }
        let value = match key & 7 {
            0 => Value::Varint(varint(&mut self.0)?),
            2 => {
                let length = usize::try_from(varint(&mut self.0)?).ok()?;
                let value = self.0.get(..length)?;
                self.0 = &self.0[length..];
                Value::Bytes(value)
            }
            _ => return None,
        };
        Some(Some((number, value)))
    }
}

/// A varint as prost reads it: at most ten bytes, the tenth at most 1.
#[inline]
fn varint(bytes: &mut &[u8]) -> Option<u64> {
    // Keys, lengths and small numbers: one byte.
    if let Some((&b, rest)) = bytes.split_first() {
        if b < 0x80 {
            *bytes = rest;
            return Some(u64::from(b));
        }
    }
    long_varint(bytes)
}

#[cold]
fn long_varint(bytes: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        if i == 9 && b > 1 {
            return None;
        }
        value |= u64::from(b & 0x7F) << (7 * i);
        if b & 0x80 == 0 {
            *bytes = &bytes[i + 1..];
            return Some(value);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pb::part::Content;
    use proptest::prelude::*;
    use prost::Message as _;

    /// Strings with the characters that matter to a reader: ASCII, multi-byte, empty.
    fn text() -> impl Strategy<Value = String> {
        prop_oneof![Just(String::new()), "[a-z/ ]{1,12}", "\\PC{0,6}",]
    }

    fn part() -> impl Strategy<Value = pb::Part> {
        let content = prop_oneof![
            Just(None),
            text().prop_map(|t| Some(Content::Text(t))),
            text().prop_map(|t| Some(Content::Url(t))),
            proptest::collection::vec(any::<u8>(), 0..4).prop_map(|b| Some(Content::Raw(b))),
        ];
        (content, text(), text(), any::<bool>()).prop_map(
            |(content, filename, media_type, meta)| pb::Part {
                content,
                filename,
                media_type,
                metadata: meta.then(prost_types::Struct::default),
            },
        )
    }

    fn message() -> impl Strategy<Value = pb::Message> {
        (
            (text(), text(), text(), -2..5i32),
            proptest::collection::vec(part(), 0..3),
            proptest::collection::vec(text(), 0..2),
            any::<bool>(),
        )
            .prop_map(
                |((message_id, context_id, task_id, role), parts, extensions, meta)| pb::Message {
                    message_id,
                    context_id,
                    task_id,
                    role,
                    parts,
                    metadata: meta.then(prost_types::Struct::default),
                    extensions: extensions.clone(),
                    reference_task_ids: extensions,
                },
            )
    }

    fn task() -> impl Strategy<Value = pb::TaskSnapshot> {
        (
            (text(), text(), text(), -1..10i32, -1..4i32),
            proptest::option::of((proptest::option::of(text()), proptest::option::of(text()))),
            proptest::option::of((any::<u32>(), any::<u32>())),
            proptest::collection::vec((text(), -1..10i32), 0..3),
        )
            .prop_map(
                |((id, context_id, name, state, sub_state), settings, plan, subs)| {
                    pb::TaskSnapshot {
                        id,
                        context_id,
                        name,
                        state,
                        sub_state,
                        settings: settings
                            .map(|(model, effort)| pb::TaskSettings { model, effort }),
                        plan: plan.map(|(steps_done, steps_total)| pb::PlanProgress {
                            steps_done,
                            steps_total,
                        }),
                        sub_tasks: subs
                            .into_iter()
                            .map(|(id, state)| pb::SubTaskSnapshot { id, state })
                            .collect(),
                    }
                },
            )
    }

    fn sender() -> impl Strategy<Value = pb::Sender> {
        (text(), -1..5i32).prop_map(|(id, role)| pb::Sender { id, role })
    }

    #[allow(deprecated)]
    fn execute_request() -> impl Strategy<Value = pb::ExecuteRequest> {
        (
            proptest::option::of(message()),
            proptest::option::of(task()),
            proptest::option::of(sender()),
            (
                -1..4i32,
                any::<u32>(),
                proptest::collection::vec(-1..4i32, 0..3),
            ),
            (any::<bool>(), any::<bool>()),
        )
            .prop_map(
                |(message, task, sender, (legacy, attempt, forms), (meta, prompt))| {
                    pb::ExecuteRequest {
                        message,
                        task,
                        sender,
                        event_json_format: legacy,
                        attempt,
                        event_forms: forms,
                        event_metadata: meta,
                        accepts_prompt: prompt,
                    }
                },
            )
    }

    fn classify_request() -> impl Strategy<Value = pb::ClassifyRequest> {
        proptest::option::of(message()).prop_map(|message| pb::ClassifyRequest { message })
    }

    fn complete_request() -> impl Strategy<Value = pb::CompleteRequest> {
        (
            text(),
            proptest::option::of(task()),
            proptest::option::of(sender()),
            any::<u32>(),
        )
            .prop_map(|(text, task, sender, limit)| pb::CompleteRequest {
                text,
                task,
                sender,
                limit,
            })
    }

    /// A view of `bytes` is what prost decodes them to, seen the same way.
    fn agrees_execute(bytes: &[u8]) {
        if let Some(view) = ExecuteView::parse(bytes) {
            let decoded = pb::ExecuteRequest::decode(bytes)
                .expect("a request with a view is one prost decodes");
            assert_eq!(view, ExecuteView::of(&decoded));
        }
    }

    fn agrees_classify(bytes: &[u8]) {
        if let Some(view) = ClassifyView::parse(bytes) {
            let decoded = pb::ClassifyRequest::decode(bytes)
                .expect("a request with a view is one prost decodes");
            assert_eq!(view, ClassifyView::of(&decoded));
        }
    }

    fn agrees_complete(bytes: &[u8]) {
        if let Some(view) = CompleteView::parse(bytes) {
            let decoded = pb::CompleteRequest::decode(bytes)
                .expect("a request with a view is one prost decodes");
            assert_eq!(view, CompleteView::of(&decoded));
        }
    }

    /// `bytes` with one change: a byte replaced, dropped or inserted at `at`.
    fn mutated(bytes: &[u8], at: usize, how: u8, byte: u8) -> Vec<u8> {
        let mut out = bytes.to_vec();
        if out.is_empty() {
            return vec![byte];
        }
        let at = at % out.len();
        match how % 3 {
            0 => out[at] = byte,
            1 => {
                out.remove(at);
            }
            _ => out.insert(at, byte),
        }
        out
    }

    proptest! {
        #[test]
        fn every_execute_request_of_the_followed_fields_has_its_view(request in execute_request()) {
            let bytes = request.encode_to_vec();
            let view = ExecuteView::parse(&bytes).expect("only followed fields: a view");
            prop_assert_eq!(view, ExecuteView::of(&request));
        }

        #[test]
        fn every_classify_request_of_the_followed_fields_has_its_view(request in classify_request()) {
            let bytes = request.encode_to_vec();
            let view = ClassifyView::parse(&bytes).expect("only followed fields: a view");
            prop_assert_eq!(view, ClassifyView::of(&request));
        }

        #[test]
        fn a_damaged_classify_request_has_no_view_or_prost_agrees(
            request in classify_request(),
            changes in proptest::collection::vec((any::<usize>(), any::<u8>(), any::<u8>()), 1..4),
        ) {
            let mut bytes = request.encode_to_vec();
            for (at, how, byte) in changes {
                bytes = mutated(&bytes, at, how, byte);
                agrees_classify(&bytes);
            }
        }

        #[test]
        fn every_complete_request_has_its_view(request in complete_request()) {
            let bytes = request.encode_to_vec();
            let view = CompleteView::parse(&bytes).expect("a view");
            prop_assert_eq!(view, CompleteView::of(&request));
        }

        #[test]
        fn a_damaged_execute_request_has_no_view_or_prost_agrees(
            request in execute_request(),
            changes in proptest::collection::vec((any::<usize>(), any::<u8>(), any::<u8>()), 1..4),
        ) {
            let mut bytes = request.encode_to_vec();
            for (at, how, byte) in changes {
                bytes = mutated(&bytes, at, how, byte);
                agrees_execute(&bytes);
            }
        }

        #[test]
        fn a_damaged_complete_request_has_no_view_or_prost_agrees(
            request in complete_request(),
            changes in proptest::collection::vec((any::<usize>(), any::<u8>(), any::<u8>()), 1..4),
        ) {
            let mut bytes = request.encode_to_vec();
            for (at, how, byte) in changes {
                bytes = mutated(&bytes, at, how, byte);
                agrees_complete(&bytes);
            }
        }

        #[test]
        fn two_requests_end_to_end_merge_as_prost_merges_them(
            a in execute_request(),
            b in execute_request(),
        ) {
            // Protobuf's rule: concatenated encodings decode as the merge of both.
            let mut bytes = a.encode_to_vec();
            bytes.extend(b.encode_to_vec());
            let view = ExecuteView::parse(&bytes).expect("a view");
            let decoded = pb::ExecuteRequest::decode(&bytes[..]).unwrap();
            prop_assert_eq!(view, ExecuteView::of(&decoded));
        }
    }

    fn execute_with(message: pb::Message) -> Vec<u8> {
        pb::ExecuteRequest {
            message: Some(message),
            ..Default::default()
        }
        .encode_to_vec()
    }

    #[test]
    fn what_the_views_do_not_follow_goes_to_prost() {
        let data = pb::Part {
            content: Some(Content::Data(prost_types::Value::default())),
            ..Default::default()
        };
        let metadata = prost_types::Struct {
            fields: [("k".to_owned(), prost_types::Value::default())].into(),
        };
        let cases = [
            // A part holding data, and metadata that is not empty.
            execute_with(pb::Message {
                parts: vec![data],
                ..Default::default()
            }),
            execute_with(pb::Message {
                metadata: Some(metadata),
                ..Default::default()
            }),
            // An unknown field (number 15, a varint), which prost skips.
            vec![0x78, 0x01],
            // A fixed-width field where a varint is declared: prost refuses it.
            vec![0x2d, 0, 0, 0, 0],
            // A string that is not UTF-8.
            vec![0x0a, 0x03, 0x0a, 0x01, 0xff],
            // Field number 0, and a varint of eleven bytes.
            vec![0x02, 0x00],
            vec![
                0x28, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
            ],
            // A length past the end.
            vec![0x0a, 0x05, 0x0a],
        ];
        for bytes in cases {
            assert_eq!(ExecuteView::parse(&bytes), None, "{bytes:02x?}");
        }
    }

    #[test]
    fn a_part_holds_the_last_content_sent() {
        // text "/a", then a url: the part is not text (a oneof keeps the last).
        let part = [0x0a, 0x02, b'/', b'a', 0x1a, 0x01, b'u'];
        let mut message = vec![0x2a, part.len() as u8];
        message.extend(part);
        let mut bytes = vec![0x0a, message.len() as u8];
        bytes.extend(&message);
        let view = ExecuteView::parse(&bytes).unwrap();
        assert_eq!(view.message.unwrap().single_text, None);
        agrees_execute(&bytes);
    }

    #[test]
    fn a_negative_enum_and_packed_or_unpacked_forms_read_as_prost_reads_them() {
        let request = pb::ExecuteRequest {
            sender: Some(pb::Sender {
                id: "s".into(),
                role: -3,
            }),
            event_forms: vec![1, 2, -1],
            ..Default::default()
        };
        let packed = request.encode_to_vec();
        assert_eq!(
            ExecuteView::parse(&packed).unwrap(),
            ExecuteView::of(&request)
        );
        // The same forms unpacked: field 6 as three varints.
        let mut unpacked = pb::ExecuteRequest {
            event_forms: vec![],
            ..request.clone()
        }
        .encode_to_vec();
        for form in [1u8, 2] {
            unpacked.extend([0x30, form]);
        }
        unpacked.extend([
            0x30, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
        ]);
        assert_eq!(
            ExecuteView::parse(&unpacked).unwrap(),
            ExecuteView::of(&request)
        );
        agrees_execute(&unpacked);
    }

    #[test]
    fn a_view_gives_back_the_task_and_sender_it_was_read_from() {
        let task = pb::TaskSnapshot {
            id: "t".into(),
            settings: Some(pb::TaskSettings::default()),
            plan: Some(pb::PlanProgress::default()),
            sub_tasks: vec![pb::SubTaskSnapshot {
                id: "s".into(),
                state: 3,
            }],
            ..Default::default()
        };
        assert_eq!(TaskView::of(&task).to_proto(), task);
        let sender = pb::Sender {
            id: "u".into(),
            role: 2,
        };
        assert_eq!(SenderView::of(&sender).to_proto(), sender);
    }
}
