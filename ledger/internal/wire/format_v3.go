package wire

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

// v3 reports whether e needs a v3 reader: the review ops, and the fields
// of v3 (commit, branch, paths). A v2 reader refuses such a line ("upgrade
// bl") rather than fold a review as something else or drop the paths.
func (e *Event) v3() bool {
	switch e.Op {
	case OpReview, OpClaimReview, OpApprove, OpReject:
		return true
	}
	return e.Commit != "" || e.Branch != "" || (e.Fields != nil && e.Fields.Paths != nil)
}
