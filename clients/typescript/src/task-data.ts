/**
 * Where a gateway keeps the task data Execute needs, and how commands change it.
 *
 * An A2A `Task` has no name, settings, plan or sub-tasks. The kit keeps them in the
 * task's own `metadata`, under the key {@link TASK_DATA_KEY} (`"a2a-commands"`), so the
 * SDK's `TaskStore` holds everything and no second store is needed:
 *
 * ```json
 * {"a2a-commands": {"name": "Docs", "settings": {"model": "gpt-x-mini", "effort": "high"},
 *                   "plan": {"stepsDone": 1, "stepsTotal": 3}, "subState": "awaiting-answer",
 *                   "subTasks": ["t-1.1", "t-1.2"]}}
 * ```
 *
 * The spelling, and how it is read and written, are docs/kit-contract.md's (section 3),
 * the same in the Python kit, which wrote snake_case keys before (`sub_tasks`,
 * `sub_state`, `parent`, `plan.steps_done`): those are read too, and written in this
 * spelling. A sub-task is an ordinary SDK `Task` (id `<parent id>.<n>`, same context,
 * state `TASK_STATE_SUBMITTED`) whose data says `parentId` and `goal`, and whose history
 * starts with the goal as a user message referring to the parent (`referenceTaskIds`).
 * Its state is read from the store whenever the parent's snapshot is built.
 *
 * @packageDocumentation
 */
import { create } from "@bufbuild/protobuf";
import { Task as SdkTaskCodec, type TaskState as SdkTaskState, type Task } from "@a2a-js/sdk";
import type { ServerCallContext, TaskStore } from "@a2a-js/sdk/server";
import { TaskState } from "./gen/a2a/commands/v1/a2a_pb.js";
import {
  SubState,
  TaskSnapshotSchema,
  type Changes,
  type SubTaskToCreate,
  type TaskSnapshot,
} from "./gen/a2a/commands/v1/commands_pb.js";

/** The key of `Task.metadata` holding the kit's {@link TaskData}. */
export const TASK_DATA_KEY = "a2a-commands";

/** What an input-required task waits for. */
export type TaskSubState = "awaiting-next-message" | "awaiting-answer";

/**
 * The task data Execute reads, kept in `Task.metadata["a2a-commands"]`. Every field is
 * optional. Keys the kit does not know are kept, as they were, when it writes the data.
 */
export interface TaskData {
  /** The task's name, shown by `/status`. */
  name?: string;
  /** Chosen settings; an absent or empty value means "the default applies". */
  settings?: { model?: string; effort?: string };
  /** The plan's progress; absent when the task has no plan. */
  plan?: { stepsDone: number; stepsTotal: number };
  /** What the task waits for; counts only while it is `TASK_STATE_INPUT_REQUIRED`. */
  subState?: TaskSubState;
  /** Ids of the task's sub-tasks, in creation order. */
  subTasks?: string[];
  /** On a sub-task: the id of the task that created it. */
  parentId?: string;
  /** On a sub-task: what it is to do. */
  goal?: string;
}

type JsonObject = Record<string, unknown>;

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const SUB_STATES: Record<TaskSubState, SubState> = {
  "awaiting-next-message": SubState.AWAITING_NEXT_MESSAGE,
  "awaiting-answer": SubState.AWAITING_ANSWER,
};
/** The keys the kit reads and writes, each with the spelling the Python kit wrote before. */
const KNOWN = new Set(["name", "settings", "plan", "subState", "sub_state", "subTasks", "sub_tasks", "parentId", "parent", "goal"]);
const MAX_COUNT = 0xffffffff;

const text = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);
/** A step count: a number's integer part in 0..2^32-1; anything else is 0. */
const count = (value: unknown): number =>
  typeof value === "number" && Number.isFinite(value) ? Math.min(Math.max(Math.trunc(value), 0), MAX_COUNT) : 0;
/** `raw[key]`, else the old spelling's value. */
const either = (raw: JsonObject, key: string, oldKey: string): unknown => (key in raw ? raw[key] : raw[oldKey]);
/** `data` without the keys that have no value. */
function compact(data: JsonObject): JsonObject {
  return Object.fromEntries(Object.entries(data).filter(([, value]) => value !== undefined));
}

/**
 * The task's {@link TaskData}, read as the contract says: the camelCase spelling, else the
 * old snake_case one; values of the wrong type ignored; keys the kit does not know kept.
 * An empty object when the task has none.
 */
export function readTaskData(task: Task): TaskData {
  const raw = task.metadata?.[TASK_DATA_KEY];
  if (!isObject(raw)) return {};
  const other = Object.fromEntries(Object.entries(raw).filter(([key]) => !KNOWN.has(key)));
  const settings = isObject(raw.settings) ? raw.settings : {};
  const chosen = compact({ model: text(settings.model), effort: text(settings.effort) });
  const plan = raw.plan;
  const subState = either(raw, "subState", "sub_state");
  const subTasks = either(raw, "subTasks", "sub_tasks");
  const ids = Array.isArray(subTasks) ? subTasks.filter((id): id is string => typeof id === "string") : [];
  return compact({
    ...other,
    name: text(raw.name),
    settings: Object.keys(chosen).length > 0 ? chosen : undefined,
    plan: isObject(plan)
      ? { stepsDone: count(either(plan, "stepsDone", "steps_done")), stepsTotal: count(either(plan, "stepsTotal", "steps_total")) }
      : undefined,
    subState: typeof subState === "string" && Object.hasOwn(SUB_STATES, subState) ? subState : undefined,
    subTasks: ids.length > 0 ? ids : undefined,
    parentId: text(either(raw, "parentId", "parent")),
    goal: text(raw.goal),
  }) as TaskData;
}

/** Replaces the task's {@link TaskData} in its metadata (in place) and returns the task. */
export function writeTaskData(task: Task, data: TaskData): Task {
  task.metadata = { ...task.metadata, [TASK_DATA_KEY]: data };
  return task;
}

/** Loads a task by id, e.g. `(id) => taskStore.load(id, context)`. */
export type TaskLoader = (taskId: string) => Promise<Task | undefined>;

/** A state as ours (the same numbers), unspecified counting as submitted. */
const state = (value: SdkTaskState | undefined): TaskState =>
  value !== undefined && value > 0 ? (value as number as TaskState) : TaskState.SUBMITTED;

/**
 * Builds Execute's `TaskSnapshot` from an SDK `Task` under the {@link TaskData}
 * convention. An unspecified state counts as submitted; the sub-state is sent only while
 * the task is input-required. Sub-task states come from `loadTask` (pass the store);
 * without it, or for a sub-task it cannot find, a sub-task shows as
 * `TASK_STATE_SUBMITTED`, the state it was created in.
 */
export async function buildTaskSnapshot(task: Task, loadTask?: TaskLoader): Promise<TaskSnapshot> {
  const data = readTaskData(task);
  const current = state(task.status?.state);
  return create(TaskSnapshotSchema, {
    id: task.id,
    contextId: task.contextId,
    name: data.name ?? "",
    state: current,
    subState: current === TaskState.INPUT_REQUIRED && data.subState ? SUB_STATES[data.subState] : SubState.UNSPECIFIED,
    settings: { model: data.settings?.model, effort: data.settings?.effort },
    plan: data.plan,
    subTasks: await Promise.all(
      (data.subTasks ?? []).map(async (id) => ({ id, state: state((await loadTask?.(id))?.status?.state) })),
    ),
  });
}

/**
 * The task data after Execute's `changes`: each set setting replaces the task's, and a
 * new sub-task's id is appended. The result is in the contract's spelling, keys the kit
 * does not know kept.
 */
export function changedTaskData(data: TaskData, changes: Changes | undefined): TaskData {
  const { model, effort } = changes?.settings ?? {};
  const settings = { ...data.settings, ...(model !== undefined && { model }), ...(effort !== undefined && { effort }) };
  const subTasks = changes?.subTask ? [...(data.subTasks ?? []), changes.subTask.id] : data.subTasks;
  return compact({ ...data, settings: Object.keys(settings).length > 0 ? settings : undefined, subTasks }) as TaskData;
}

/** The `Task` a `/sub-task` creates: submitted, in the parent's context, its goal as history. */
export function newSubTask(parent: Task, subTask: SubTaskToCreate): Task {
  const data: TaskData = { name: subTask.name, goal: subTask.goal, parentId: parent.id };
  return SdkTaskCodec.fromJSON({
    id: subTask.id,
    contextId: parent.contextId,
    status: { state: "TASK_STATE_SUBMITTED", timestamp: new Date().toISOString() },
    history: [
      {
        messageId: `${subTask.id}:goal`,
        contextId: parent.contextId,
        taskId: subTask.id,
        role: "ROLE_USER",
        parts: [{ text: subTask.goal }],
        referenceTaskIds: [parent.id],
      },
    ],
    metadata: { [TASK_DATA_KEY]: data },
  });
}

/** Where the kit saves a task it changes: a new sub-task ({@link applyChanges}), a wait ended ({@link endWaitForNextMessage}). */
export interface ApplyTarget {
  taskStore: TaskStore;
  context: ServerCallContext;
}

/**
 * Applies Execute's `changes` to `task` under the {@link TaskData} convention
 * ({@link changedTaskData}); a sub-task is created ({@link newSubTask}) and saved in the
 * store. `task` is changed in place but not saved: save it (or publish it, for a new
 * task) before emitting the reply. Answers the new sub-task, if any.
 */
export async function applyChanges(task: Task, changes: Changes | undefined, target: ApplyTarget): Promise<Task | undefined> {
  if (!changes) return undefined;
  const subTask = changes.subTask && newSubTask(task, changes.subTask);
  if (subTask) await target.taskStore.save(subTask, target.context);
  writeTaskData(task, changedTaskData(readTaskData(task), changes));
  return subTask;
}

/**
 * Ends a wait for the next message: clears the task's sub-state `awaiting-next-message`,
 * since the message it waited for is here. Call it when a message that is not a command
 * is handed to the agent (docs/kit-contract.md, section 4). The data is changed in
 * `task` itself, so the agent reads it as it now is (and a Task it publishes from it does
 * not write the old sub-state back: the SDK merges a published Task's metadata over the
 * stored one), and saved in the store at once, so it holds whatever events the agent
 * publishes. `awaiting-answer` is left alone: the agent set it, and only the agent knows
 * whether this message answers. Answers whether there was such a wait to end.
 */
export async function endWaitForNextMessage(task: Task, target: ApplyTarget): Promise<boolean> {
  const data = readTaskData(task);
  if (data.subState !== "awaiting-next-message") return false;
  writeTaskData(task, compact({ ...data, subState: undefined }) as TaskData);
  await target.taskStore.save(task, target.context);
  return true;
}
