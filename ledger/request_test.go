package ledger

import (
	"strings"
	"testing"
	"time"
)

// TestRequestIDNamesOneRequest: a request id reused for a different
// request (another card, another title) is refused with ErrConflict naming
// what it was used for and appends nothing; the same request is a replay.
func TestRequestIDNamesOneRequest(t *testing.T) {
	e := newEnv(t)
	e.create("A")
	e.create("B")
	create := func(id, title, req string) func(*env) error {
		return func(e *env) error {
			_, _, err := e.b.Create(e.ctx, CreateRequest{Mutation: rid(req), ID: id, Title: title})
			return err
		}
	}
	e.appendsOne(OpCreate, create("R1", "first", "rq1"))
	err := e.unchanged(ErrConflict, create("R2", "first", "rq1"))
	if !strings.Contains(err.Error(), `"rq1" was already used for create of R1`) {
		t.Fatalf("err = %v", err)
	}
	e.unchanged(ErrConflict, create("R1", "another title", "rq1"))
	e.unchanged(ErrConflict, create("", "another title", "rq1"))

	// Without an id, the title is what names the create.
	var first Card
	e.appendsOne(OpCreate, func(e *env) (err error) {
		first, _, err = e.b.Create(e.ctx, CreateRequest{Mutation: rid("rq2"), Title: "generated"})
		return err
	})
	// A replay answers as the first call did (created), appending nothing.
	size := len(e.bytes())
	again, _, err := e.b.Create(e.ctx, CreateRequest{Mutation: rid("rq2"), Title: "generated"})
	if err != nil || again.ID != first.ID || len(e.bytes()) != size {
		t.Fatalf("replay = %s %v", again.ID, err)
	}
	e.unchanged(ErrConflict, create("", "other", "rq2"))
	// Once the card was edited its first title is unknown: op and id decide.
	if _, err := e.b.Update(e.ctx, UpdateRequest{Mutation: m, ID: first.ID, Fields: Fields{Title: strp("renamed")}}); err != nil {
		t.Fatal(err)
	}
	if again, _, err := e.b.Create(e.ctx, CreateRequest{Mutation: rid("rq2"), Title: "generated"}); err != nil || again.ID != first.ID {
		t.Fatalf("replay after edit = %s %v", again.ID, err)
	}

	// claim --id and reclaim --id name their card; claim without one
	// replays on its op.
	if _, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: rid("rq3"), ID: "A", Owner: "w1", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	e.unchanged(ErrConflict, func(e *env) error {
		_, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: rid("rq3"), ID: "B", Owner: "w1", TTL: time.Minute})
		return err
	})
	if c, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: rid("rq3"), Owner: "w1", TTL: time.Minute}); err != nil || c == nil || c.ID != "A" {
		t.Fatalf("claim replay without id = %+v %v", c, err)
	}
	if _, err := e.b.Reclaim(e.ctx, ReclaimRequest{Mutation: rid("rq4"), ID: "A"}); err != nil {
		t.Fatal(err)
	}
	e.unchanged(ErrConflict, func(e *env) error {
		_, err := e.b.Reclaim(e.ctx, ReclaimRequest{Mutation: rid("rq4"), ID: "B"})
		return err
	})
}
