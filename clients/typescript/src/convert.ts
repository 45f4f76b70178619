/**
 * Conversion between the SDK's A2A 1.0 objects (`@a2a-js/sdk`) and the sidecar's mirror of
 * them (`a2a.commands.v1`, field for field `lf.a2a.v1`). Both sides speak the canonical
 * protobuf JSON mapping, so every conversion goes through it: no field is copied by hand.
 *
 * @packageDocumentation
 */
import { fromJson, toJson, type JsonValue } from "@bufbuild/protobuf";
import {
  Message as SdkMessageCodec,
  TaskStatusUpdateEvent as SdkStatusUpdateCodec,
  type Message as SdkMessage,
  type TaskStatusUpdateEvent as SdkStatusUpdate,
} from "@a2a-js/sdk";
import {
  MessageSchema,
  TaskStatusUpdateEventSchema,
  type Message,
  type TaskStatusUpdateEvent,
} from "./gen/a2a/commands/v1/a2a_pb.js";

const read = { ignoreUnknownFields: true } as const;

/** The SDK's `Message` as the sidecar's `Message`. */
export function fromSdkMessage(message: SdkMessage): Message {
  return fromJson(MessageSchema, SdkMessageCodec.toJSON(message) as JsonValue, read);
}

/** The sidecar's `Message` as the SDK's `Message`. */
export function toSdkMessage(message: Message): SdkMessage {
  return SdkMessageCodec.fromJSON(toJson(MessageSchema, message));
}

/** The SDK's `TaskStatusUpdateEvent` as the sidecar's. */
export function fromSdkStatusUpdate(event: SdkStatusUpdate): TaskStatusUpdateEvent {
  return fromJson(TaskStatusUpdateEventSchema, SdkStatusUpdateCodec.toJSON(event) as JsonValue, read);
}

/**
 * The sidecar's `TaskStatusUpdateEvent` (Execute's reply event) as the SDK's, ready for
 * `eventBus.publish(AgentEvent.statusUpdate(...))`.
 */
export function toSdkStatusUpdate(event: TaskStatusUpdateEvent): SdkStatusUpdate {
  return SdkStatusUpdateCodec.fromJSON(toJson(TaskStatusUpdateEventSchema, event));
}
