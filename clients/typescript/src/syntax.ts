/**
 * Which messages the kit sends to the sidecar, and which it answers when the sidecar is
 * away: docs/kit-contract.md's rules (sections 1 and 2), pinned with the Python kit and
 * the service by `docs/vectors/messages.json`.
 *
 * @packageDocumentation
 */
import type { Message } from "@a2a-js/sdk";

/**
 * `/`, a name, then the end or a whitespace character. Whitespace is written out: it is
 * exactly Python's `str.isspace()` (the reference's `\s`). JavaScript's own `\s` would
 * also take U+FEFF and miss U+001C–U+001F and U+0085.
 */
const COMMAND_SYNTAX = /^\/([a-z][a-z0-9-]*)(?:[\t-\r\x1c- \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]|$)/;

function singleText(message: Message): string | undefined {
  const [part, ...rest] = message.parts;
  return rest.length === 0 && part?.content?.$case === "text" ? part.content.value : undefined;
}

/**
 * Whether `message` may be a command: exactly one part, text, starting with `/` and a
 * lower-case letter. A message for which this is false can never be a command, whatever
 * is registered, so it reaches the wrapped executor without a call to the sidecar.
 */
export function mayBeCommand(message: Message): boolean {
  const text = singleText(message);
  return text !== undefined && text.startsWith("/") && text[1] !== undefined && text[1] >= "a" && text[1] <= "z";
}

/**
 * The name of a message with command syntax (registered or not: the extension's syntax
 * alone), else `undefined`. Decides the fallback reply when the sidecar cannot answer.
 */
export function commandName(message: Message): string | undefined {
  const text = singleText(message);
  return text === undefined ? undefined : COMMAND_SYNTAX.exec(text)?.[1];
}
