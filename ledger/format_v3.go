package ledger

// needsV3 reports whether a v2 reader would misread e: the handoff, delete
// and restore ops, a typed link or unlink (read as a dependency), and the
// completion of an epic by its last child (e.To on a complete). A v2 bl
// refuses such a line ("upgrade bl").
func (e *Event) needsV3() bool {
	switch e.Op {
	case OpHandoff, OpDelete, OpRestore:
		return true
	case OpLink, OpUnlink:
		return e.LinkType != ""
	case OpComplete:
		return e.To != ""
	}
	return false
}
