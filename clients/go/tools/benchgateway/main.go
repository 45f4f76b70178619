// Command benchgateway is the gateway scripts/bench-kits.sh measures: the README's
// gateway around the echo agent ("kit"), or the same gateway without the kit ("plain").
// It listens on 127.0.0.1 at a free port (PORT to choose) and prints "listening <port>".
package main

import (
	"context"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/a2a-commands/a2a-commands/clients/go/a2acommands"
	"github.com/a2a-commands/a2a-commands/clients/go/internal/echoagent"
)

func main() {
	if len(os.Args) != 2 || (os.Args[1] != "kit" && os.Args[1] != "plain") {
		log.Fatal("usage: benchgateway kit|plain")
	}
	listener, err := net.Listen("tcp", "127.0.0.1:"+os.Getenv("PORT"))
	if err != nil {
		log.Fatal(err)
	}
	url := "http://" + listener.Addr().String()
	card := &a2a.AgentCard{
		Name: "Echo", Description: "Echoes", Version: "1.0.0",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(url, a2a.TransportProtocolJSONRPC)},
		Capabilities:        a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:   []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
	}
	store := taskstore.NewInMemory(nil)
	var agent a2asrv.AgentExecutor = &echoagent.Agent{}
	mux := http.NewServeMux()
	if os.Args[1] == "kit" {
		commands, err := a2acommands.NewClient("")
		if err != nil {
			log.Fatal(err)
		}
		executor := a2acommands.NewExecutor(agent, commands, store)
		entry := a2acommands.NewCard(commands)
		go entry.Run(context.Background())
		handler := a2asrv.NewHandler(executor, a2asrv.WithTaskStore(store))
		mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewAgentCardHandler(entry.Producer(card)))
		mux.Handle("/", a2acommands.CompletionHandler(a2asrv.NewJSONRPCHandler(handler), executor, nil))
	} else {
		handler := a2asrv.NewHandler(agent, a2asrv.WithTaskStore(store))
		mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
		mux.Handle("/", a2asrv.NewJSONRPCHandler(handler))
	}
	fmt.Println("listening", listener.Addr().(*net.TCPAddr).Port)
	log.Fatal(http.Serve(listener, mux))
}
