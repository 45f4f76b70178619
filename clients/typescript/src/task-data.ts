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
 * A sub-task is an ordinary SDK `Task` (id `<parent id>.<n>`, same context, state
 * `TASK_STATE_SUBMITTED`) whose data says `parentId` and `goal`, and whose history starts
 * with the goal as a user message referring to the parent (`referenceTaskIds`). Its state
 * is read from the store whenever the parent's snapshot is built.
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
  type TaskSnapshot,
} from "./gen/a2a/commands/v1/commands_pb.js";

/** The key of `Task.metadata` holding the kit's {@link TaskData}. */
export const TASK_DATA_KEY = "a2a-commands";

/** The task data Execute reads, kept in `Task.metadata["a2a-commands"]`. Every field is optional. */
export interface TaskData {
  /** The task's name, shown by `/status`. */
  name?: string;
  /** Chosen settings; an absent or empty value means "the default applies". */
  settings?: { model?: string; effort?: "low" | "medium" | "high" | string };
  /** The plan's progress; absent when the task has no plan. */
  plan?: { stepsDone: number; stepsTotal: number };
  /** What an input-required task is waiting for. */
  subState?: "awaiting-next-message" | "awaiting-answer";
  /** Ids of the task's sub-tasks, in creation order. */
  subTasks?: string[];
  /** On a sub-task: the id of the task that created it. */
  parentId?: string;
  /** On a sub-task: what it is to do. */
  goal?: string;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The task's {@link TaskData} (an empty object when it has none). */
export function readTaskData(task: Task): TaskData {
  const data = task.metadata?.[TASK_DATA_KEY];
  return isObject(data) ? (data as TaskData) : {};
}

/** Replaces the task's {@link TaskData} in its metadata (in place) and returns the task. */
export function writeTaskData(task: Task, data: TaskData): Task {
  task.metadata = { ...task.metadata, [TASK_DATA_KEY]: data };
  return task;
}

/** Loads a task by id, e.g. `(id) => taskStore.load(id, context)`. */
export type TaskLoader = (taskId: string) => Promise<Task | undefined>;

const text = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);
const count = (value: unknown): number => (typeof value === "number" && value > 0 ? Math.min(Math.trunc(value), 0xffffffff) : 0);
const state = (value: SdkTaskState | undefined): TaskState =>
  value !== undefined && value > 0 ? (value as number as TaskState) : TaskState.UNSPECIFIED;

/**
 * Builds Execute's `TaskSnapshot` from an SDK `Task` under the {@link TaskData}
 * convention. Sub-task states come from `loadTask` (pass the store); without it, or for
 * a sub-task it cannot find, a sub-task shows as `TASK_STATE_SUBMITTED`, the state it was
 * created in (it stays listed, so the next sub-task's number never repeats one).
 */
export async function buildTaskSnapshot(task: Task, loadTask?: TaskLoader): Promise<TaskSnapshot> {
  const data = readTaskData(task);
  const settings = isObject(data.settings) ? data.settings : {};
  const subTasks = Array.isArray(data.subTasks) ? data.subTasks.filter((id) => typeof id === "string") : [];
  return create(TaskSnapshotSchema, {
    id: task.id,
    contextId: task.contextId,
    name: text(data.name) ?? "",
    state: state(task.status?.state),
    subState:
      data.subState === "awaiting-next-message" ? SubState.AWAITING_NEXT_MESSAGE
      : data.subState === "awaiting-answer" ? SubState.AWAITING_ANSWER
      : SubState.UNSPECIFIED,
    settings: { model: text(settings.model), effort: text(settings.effort) },
    plan: isObject(data.plan) ? { stepsDone: count(data.plan.stepsDone), stepsTotal: count(data.plan.stepsTotal) } : undefined,
    subTasks: await Promise.all(
      subTasks.map(async (id) => ({ id, state: state((await loadTask?.(id))?.status?.state) || TaskState.SUBMITTED })),
    ),
  });
}

/** Where {@link applyChanges} saves a new sub-task. */
export interface ApplyTarget {
  taskStore: TaskStore;
  context: ServerCallContext;
}

/**
 * Applies Execute's `changes` to `task` under the {@link TaskData} convention: each set
 * setting replaces the task's, and a sub-task is created as a new SDK `Task`, saved in
 * the store and linked both ways. `task` is changed in place but not saved: save it (or
 * publish it, for a new task) before emitting the reply. Answers the new sub-task, if any.
 */
export async function applyChanges(task: Task, changes: Changes | undefined, target: ApplyTarget): Promise<Task | undefined> {
  if (!changes) return undefined;
  const data = { ...readTaskData(task) };
  const { model, effort } = changes.settings ?? {};
  if (model !== undefined || effort !== undefined) {
    data.settings = { ...data.settings, ...(model !== undefined && { model }), ...(effort !== undefined && { effort }) };
  }
  let subTask: Task | undefined;
  const spec = changes.subTask;
  if (spec) {
    const sub: TaskData = { name: spec.name, goal: spec.goal, parentId: task.id };
    subTask = SdkTaskCodec.fromJSON({
      id: spec.id,
      contextId: task.contextId,
      status: { state: "TASK_STATE_SUBMITTED", timestamp: new Date().toISOString() },
      history: [
        {
          messageId: `${spec.id}:goal`,
          contextId: task.contextId,
          taskId: spec.id,
          role: "ROLE_USER",
          parts: [{ text: spec.goal }],
          referenceTaskIds: [task.id],
        },
      ],
      metadata: { [TASK_DATA_KEY]: sub },
    });
    await target.taskStore.save(subTask, target.context);
    data.subTasks = [...(data.subTasks ?? []), spec.id];
  }
  writeTaskData(task, data);
  return subTask;
}
