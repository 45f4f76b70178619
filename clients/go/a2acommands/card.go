package a2acommands

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// Card keeps the agent card's commands extension entry current from WatchSpecs.
//
// [Card.Run] follows WatchSpecs, reconnecting with exponential backoff (from 0.2 s,
// doubling to 5 s, times a jitter of 0.5 to 1) whenever the sidecar goes away; while it
// is away the card keeps the last entry seen, and before any was seen the card is served
// without one. [Card.Producer] serves a card through a2asrv.NewAgentCardHandler.
type Card struct {
	client     *Client
	logger     *slog.Logger
	minBackoff time.Duration
	maxBackoff time.Duration

	mu       sync.Mutex
	entry    *a2a.AgentExtension
	revision uint64
	changed  chan struct{} // closed, and replaced, at every update
}

// CardOption configures [NewCard].
type CardOption func(*Card)

// WithBackoff sets the first and the longest wait between reconnections.
func WithBackoff(first, longest time.Duration) CardOption {
	return func(c *Card) { c.minBackoff, c.maxBackoff = first, longest }
}

// WithCardLogger sets where lost watches are reported (default slog.Default()).
func WithCardLogger(logger *slog.Logger) CardOption {
	return func(c *Card) { c.logger = logger }
}

// NewCard makes a card entry follower on client; call [Card.Run] to start following.
func NewCard(client *Client, options ...CardOption) *Card {
	card := &Card{client: client, logger: slog.Default(), minBackoff: 200 * time.Millisecond, maxBackoff: 5 * time.Second, changed: make(chan struct{})}
	for _, option := range options {
		option(card)
	}
	return card
}

// Run follows WatchSpecs until ctx ends.
func (c *Card) Run(ctx context.Context) {
	backoff := c.minBackoff
	for ctx.Err() == nil {
		var lost error
		for registry, err := range c.client.WatchSpecs(ctx) {
			if err != nil {
				lost = err
				break
			}
			backoff = c.minBackoff
			c.update(registry)
		}
		if ctx.Err() != nil {
			return
		}
		delay := time.Duration(float64(backoff) * (0.5 + rand.Float64()/2))
		c.logger.InfoContext(ctx, "a2a-commands: watch lost; retrying", "error", lost, "delay", delay)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		backoff = min(backoff*2, c.maxBackoff)
	}
}

func (c *Card) update(registry *Registry) {
	c.set(registry, false)
}

// set takes registry's entry; onlyFirst keeps an entry already there (a listing must not
// overwrite what the watch delivered meanwhile).
func (c *Card) set(registry *Registry, onlyFirst bool) {
	if registry.CardExtension == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if onlyFirst && c.entry != nil {
		return
	}
	c.entry, c.revision = registry.CardExtension, registry.Revision
	close(c.changed)
	c.changed = make(chan struct{})
}

// Entry is the latest extension entry (nil before the first answer) and its registry
// revision.
func (c *Card) Entry() (*a2a.AgentExtension, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entry, c.revision
}

// WaitForRevision waits until the entry reflects registry revision or a later one.
func (c *Card) WaitForRevision(ctx context.Context, revision uint64) error {
	for {
		c.mu.Lock()
		reached, changed := c.revision >= revision && c.entry != nil, c.changed
		c.mu.Unlock()
		if reached {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// Apply is a copy of card whose capabilities.extensions hold the current entry, in
// place of any entry with the same URI.
func (c *Card) Apply(card *a2a.AgentCard) *a2a.AgentCard {
	served := *card
	entry, _ := c.Entry()
	if entry == nil {
		return &served
	}
	extensions := slices.DeleteFunc(slices.Clone(card.Capabilities.Extensions), func(e a2a.AgentExtension) bool {
		return e.URI == entry.URI
	})
	served.Capabilities.Extensions = append(extensions, *entry)
	return &served
}

// cardListingTimeout bounds the listing a card request makes before the watch answered.
const cardListingTimeout = 5 * time.Second

// Producer serves card with the current entry, for a2asrv.NewAgentCardHandler. Until the
// watch has answered, a request lists the registry itself once, so the first card
// served after start already has the commands when the sidecar is up.
func (c *Card) Producer(card *a2a.AgentCard) a2asrv.AgentCardProducer {
	return a2asrv.AgentCardProducerFn(func(ctx context.Context) (*a2a.AgentCard, error) {
		if entry, _ := c.Entry(); entry == nil {
			// A sidecar that hangs must not hold the card: it is served without the
			// entry after a short wait.
			listCtx, cancel := context.WithTimeout(ctx, cardListingTimeout)
			registry, err := c.client.ListSpecs(listCtx)
			cancel()
			if err != nil {
				c.logger.WarnContext(ctx, "a2a-commands: card served without commands", "error", err)
			} else {
				c.set(registry, true)
			}
		}
		return c.Apply(card), nil
	})
}
