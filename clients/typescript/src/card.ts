/**
 * The agent card's commands extension entry, kept current from WatchSpecs.
 *
 * @packageDocumentation
 */
import { setTimeout as sleep } from "node:timers/promises";
import { AgentExtension as SdkExtensionCodec, type AgentCard, type AgentExtension } from "@a2a-js/sdk";
import { toCommandsError, type CommandsClient, type CommandsError } from "./client.js";
import type { ListSpecsResponse } from "./gen/a2a/commands/v1/commands_pb.js";

/** The Commands extension v1's URI, as on the card and in the `A2A-Extensions` header. */
export const COMMANDS_EXTENSION_URI = "https://madarauchiha-314.github.io/tiny-harness/a2a/ext/commands/v1";

/**
 * Puts the commands extension entry (ListSpecs' `cardExtensionJson`) into
 * `card.capabilities.extensions`, in place: it replaces the entry with the same URI, or
 * is appended. Answers the entry.
 */
export function setCommandsExtension(card: AgentCard, cardExtensionJson: string): AgentExtension {
  const entry = SdkExtensionCodec.fromJSON(JSON.parse(cardExtensionJson));
  card.capabilities ??= { extensions: [] };
  const list = (card.capabilities.extensions ??= []);
  const at = list.findIndex((e) => e.uri === entry.uri);
  if (at >= 0) list[at] = entry;
  else list.push(entry);
  return entry;
}

/** How {@link CommandsCardSync} reconnects. */
export interface CardSyncOptions {
  /** First wait before reconnecting, in milliseconds (default 100); doubles per failure. */
  minBackoffMs?: number;
  /** Longest wait between reconnections, in milliseconds (default 5,000). */
  maxBackoffMs?: number;
  /** Called when the stream fails (default: `console.warn`). */
  onError?: (error: CommandsError) => void;
}

/**
 * Keeps an SDK `AgentCard`'s commands extension entry current: it watches the registry
 * (WatchSpecs) and rewrites the entry in place on every change, so the card object given
 * to `DefaultRequestHandler` is always served current. When the sidecar goes away it
 * reconnects with exponential backoff (jittered), and catches up on reconnection.
 * Create it with {@link keepCardCurrent}.
 */
export class CommandsCardSync {
  /** The registry revision the card shows; `undefined` until the first state arrives. */
  revision: bigint | undefined;
    readonly #ready: Promise<void>;
  /** Whether someone waits for {@link ready}: only then does the retry keep the process alive. */
  #readyAwaited = false;
  readonly #abort = new AbortController();
  readonly #waiters = new Set<{ revision: bigint; resolve: () => void }>();
  #markReady!: () => void;

  constructor(
    readonly card: AgentCard,
    readonly client: CommandsClient,
    readonly options: CardSyncOptions = {},
  ) {
        this.#ready = new Promise((resolve) => (this.#markReady = resolve));
    void this.#run();
  }

    /** Resolves once the card carries the entry for the first time. */
  get ready(): Promise<void> {
    this.#readyAwaited = true;
    return this.#ready;
  }

  /** Resolves once the card shows `revision` or a later one (e.g. Register's answer). */
  waitForRevision(revision: bigint): Promise<void> {
    if (this.revision !== undefined && this.revision >= revision) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.add({ revision, resolve }));
  }

  /** Stops watching; the card keeps the last entry. */
  stop(): void {
    this.#abort.abort();
  }

  #apply(state: ListSpecsResponse): void {
    setCommandsExtension(this.card, state.cardExtensionJson);
    this.revision = state.revision;
    this.#markReady();
    for (const waiter of this.#waiters) {
      if (state.revision >= waiter.revision) {
        this.#waiters.delete(waiter);
        waiter.resolve();
      }
    }
  }

  async #run(): Promise<void> {
    const { signal } = this.#abort;
    const min = this.options.minBackoffMs ?? 100;
    const max = this.options.maxBackoffMs ?? 5_000;
    const onError = this.options.onError ?? ((e) => console.warn(`a2a-commands: card watch: ${e.message}`));
    let backoff = min;
    while (!signal.aborted) {
      try {
        for await (const state of this.client.watchSpecs({}, { signal })) {
          this.#apply(state);
          backoff = min;
        }
      } catch (error) {
        if (signal.aborted) return;
        onError(toCommandsError(error));
      }
      try {
                // While a gateway waits for `ready`, the wait keeps the process alive, so it waits
        // rather than exiting for want of anything to do; otherwise it never holds a
        // shutting-down process.
        const holds = this.#readyAwaited && this.revision === undefined;
        await sleep(backoff * (0.5 + Math.random() / 2), undefined, { signal, ref: holds });
      } catch {
        return;
      }
      backoff = Math.min(backoff * 2, max);
    }
  }
}

/**
 * Starts keeping `card`'s commands extension entry current (see {@link CommandsCardSync}).
 * The card is served at once, without the entry until the sidecar first answers; `await
 * sync.ready` before serving only if the card must list the commands from the start (the
 * wait then lasts until the sidecar answers).
 */
export function keepCardCurrent(card: AgentCard, client: CommandsClient, options?: CardSyncOptions): CommandsCardSync {
  return new CommandsCardSync(card, client, options);
}
