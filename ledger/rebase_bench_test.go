package ledger

import (
	"fmt"
	"testing"
)

// BenchmarkRebaseLocal10k: bl sync's rebase of 10,000 local events (2,500
// cards created, each noted three times) onto an upstream that added 11
// events: none a create (the common round), one create of another id, or
// one create of an id the local side created too (a rename).
func BenchmarkRebaseLocal10k(b *testing.B) {
	base := newEnv(b)
	base.create("U")
	local := newEnv(b)
	local.writeLedger(base.bytes())
	local.clk.Set(base.clk.Now())
	local.b = local.open()
	for i := range 2500 {
		id := fmt.Sprintf("L%d", i)
		local.create(id)
		for range 3 {
			if _, err := local.b.Note(local.ctx, NoteRequest{Mutation: m, ID: id, Text: "n"}); err != nil {
				b.Fatal(err)
			}
		}
	}
	lt := local.tree()
	for _, upCase := range []string{"notes", "create", "collision"} {
		up := newEnv(b)
		up.writeLedger(base.bytes())
		up.clk.Set(base.clk.Now())
		up.b = up.open()
		for range 10 {
			if _, err := up.b.Note(up.ctx, NoteRequest{Mutation: m, ID: "U", Text: "u"}); err != nil {
				b.Fatal(err)
			}
		}
		switch upCase {
		case "notes":
			if _, err := up.b.Note(up.ctx, NoteRequest{Mutation: m, ID: "U", Text: "u"}); err != nil {
				b.Fatal(err)
			}
		case "create":
			up.create("V")
		case "collision":
			up.create("L7")
		}
		ut := up.tree()
		b.Run(upCase, func(b *testing.B) {
			for range b.N {
				if _, _, err := rebaseOnto(ut, lt, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
