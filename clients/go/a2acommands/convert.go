package a2acommands

import (
	"encoding/json"
	"fmt"

	"github.com/a2aproject/a2a-go/v2/a2a"
	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"github.com/a2aproject/a2a-go/v2/a2apb/v1/pbconv"
	"google.golang.org/protobuf/proto"

	pb "github.com/a2a-commands/a2a-commands/clients/go/internal/commandspb"
)

// Our a2a.commands.v1 mirrors of the A2A 1.0 objects have lf.a2a.v1's field numbers and
// types, so a conversion is the SDK's own conversion to lf.a2a.v1 and a protobuf round
// trip: nothing is lost, and what we do not mirror travels as unknown fields.

// recast re-reads from as to, a message with the same field numbers.
func recast(from, to proto.Message) error {
	bytes, err := proto.Marshal(from)
	if err != nil {
		return err
	}
	return proto.Unmarshal(bytes, to)
}

// messageToProto is an a2a-go Message as ours, for Classify and Execute.
func messageToProto(message *a2a.Message) (*pb.Message, error) {
	response, err := pbconv.ToProtoStreamResponse(message)
	if err != nil {
		return nil, fmt.Errorf("converting the message: %w", err)
	}
	ours := &pb.Message{}
	if err := recast(response.GetMessage(), ours); err != nil {
		return nil, fmt.Errorf("converting the message: %w", err)
	}
	return ours, nil
}

// eventFromProto is Execute's reply event as a2a-go's, ready to be yielded.
func eventFromProto(event *pb.TaskStatusUpdateEvent) (*a2a.TaskStatusUpdateEvent, error) {
	theirs := &a2apb.TaskStatusUpdateEvent{}
	if err := recast(event, theirs); err != nil {
		return nil, fmt.Errorf("converting the reply: %w", err)
	}
	converted, err := pbconv.FromProtoStreamResponse(&a2apb.StreamResponse{
		Payload: &a2apb.StreamResponse_StatusUpdate{StatusUpdate: theirs},
	})
	if err != nil {
		return nil, fmt.Errorf("converting the reply: %w", err)
	}
	update, ok := converted.(*a2a.TaskStatusUpdateEvent)
	if !ok {
		return nil, fmt.Errorf("converting the reply: got %T", converted)
	}
	return update, nil
}

// extensionFromJSON is ListSpecs' card_extension_json as a2a-go's AgentExtension.
func extensionFromJSON(text string) (*a2a.AgentExtension, error) {
	var extension a2a.AgentExtension
	if err := json.Unmarshal([]byte(text), &extension); err != nil {
		return nil, fmt.Errorf("reading the card entry: %w", err)
	}
	return &extension, nil
}
