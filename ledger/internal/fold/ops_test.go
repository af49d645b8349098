package fold

import (
	"testing"

	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// TestEveryOpHasRules: each op of the format has its check and apply in
// the kinds table, and the table holds no op the format lacks, so an op
// the readers call known (Op.Known) is one the fold can apply.
func TestEveryOpHasRules(t *testing.T) {
	for _, op := range wire.Ops {
		k, ok := kinds[op]
		if !ok || k.check == nil || k.apply == nil {
			t.Errorf("op %s has no check and apply in the kinds table (ops.go)", op)
		}
	}
	for op := range kinds {
		if !op.Known() {
			t.Errorf("the kinds table has a row for %s, which the format does not know", op)
		}
	}
}
