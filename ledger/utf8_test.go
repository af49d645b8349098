package ledger

import (
	"strings"
	"testing"
	"time"
)

// TestInvalidUTF8Refused: text that is not UTF-8, in any field of any
// request, is refused with ErrInvalid and appends nothing, instead of being
// stored with U+FFFD in place of the bad bytes.
func TestInvalidUTF8Refused(t *testing.T) {
	const bad = "ok\xffno"
	e := newEnv(t)
	e.create("A")
	e.create("B")
	for name, fn := range map[string]func(*env) error{
		"title": func(e *env) error {
			_, _, err := e.b.Create(e.ctx, CreateRequest{Mutation: m, Title: bad})
			return err
		},
		"body": func(e *env) error {
			_, _, err := e.b.Create(e.ctx, CreateRequest{Mutation: m, ID: "C", Title: "t", Body: bad})
			return err
		},
		"label": func(e *env) error {
			_, _, err := e.b.Create(e.ctx, CreateRequest{Mutation: m, ID: "C", Title: "t", Labels: []string{"x", bad}})
			return err
		},
		"acceptance criterion": func(e *env) error {
			_, err := e.b.Update(e.ctx, UpdateRequest{Mutation: m, ID: "A", Fields: Fields{Acceptance: &[]string{bad}}})
			return err
		},
		"phase": func(e *env) error {
			_, err := e.b.Update(e.ctx, UpdateRequest{Mutation: m, ID: "A", Fields: Fields{Phase: strp(bad)}})
			return err
		},
		"idempotency key": func(e *env) error {
			_, _, err := e.b.Create(e.ctx, CreateRequest{Mutation: m, Title: "t", IdempotencyKey: bad})
			return err
		},
		"owner": func(e *env) error {
			_, err := e.b.Claim(e.ctx, ClaimRequest{Mutation: m, ID: "A", Owner: bad, TTL: time.Minute})
			return err
		},
		"actor": func(e *env) error {
			_, err := e.b.Block(e.ctx, LeaseRequest{Mutation: Mutation{Actor: bad}, ID: "A"})
			return err
		},
		"reason": func(e *env) error {
			_, err := e.b.Block(e.ctx, LeaseRequest{Mutation: m, ID: "B", Reason: bad})
			return err
		},
		"request id": func(e *env) error {
			_, err := e.b.Block(e.ctx, LeaseRequest{Mutation: rid(bad), ID: "B"})
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			err := e.unchanged(ErrInvalid, fn)
			if want := "the " + name + " of this "; !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "byte 0xff at offset 2") {
				t.Fatalf("err = %v, want it to name %q and the byte", err, want)
			}
		})
	}
	// Valid text beyond ASCII is stored exactly.
	c, _, err := e.b.Create(e.ctx, CreateRequest{Mutation: m, Title: "naïve ✓ 漢字", Labels: []string{"ü"}})
	if err != nil || c.Title != "naïve ✓ 漢字" || c.Labels[0] != "ü" {
		t.Fatalf("create = %+v, %v", c, err)
	}
}
