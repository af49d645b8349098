package wire

import "testing"

// TestOpInfo: every op of the format says what it did (Op.Done) and the
// version that reads it, and no version is newer than the format's.
func TestOpInfo(t *testing.T) {
	for _, op := range Ops {
		info, ok := opInfo[op]
		switch {
		case !ok:
			t.Errorf("op %s has no row in opInfo (schema.go)", op)
		case info.done == "":
			t.Errorf("op %s says nothing for Done", op)
		case info.since < 1 || info.since > FormatVersion:
			t.Errorf("op %s is read from version %d, outside 1..%d", op, info.since, FormatVersion)
		}
	}
	if len(opInfo) != len(Ops) {
		t.Errorf("opInfo has %d rows for %d ops", len(opInfo), len(Ops))
	}
}
