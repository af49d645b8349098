package wire

// LineVersion is the lowest format version that reads e right: its op's
// (opInfo in schema.go), raised to 4 for an assignee and for an imported
// card's or note's source times (a v3 reader would drop them), to 3 for the members a v2 reader would
// misread or drop (a typed link or unlink, read as a dependency; e.To on a
// complete, the completion of an epic by its last child; the commit,
// branch and paths of the review gate) and to 2 for those a v1 reader
// would take for damage (a writer's clock, a retry backoff). An older bl
// refuses a line of a newer version ("upgrade bl") rather than misread it.
func (e *Event) LineVersion() int {
	v := max(1, opInfo[e.Op].since)
	switch {
	case e.Fields != nil && (e.Fields.Assignee != nil || e.Fields.SourceCreatedAt != nil || e.Fields.SourceUpdatedAt != nil || e.Fields.SourceClosedAt != nil),
		e.SourceAt != nil:
		return 4
	case e.LinkType != "" && (e.Op == OpLink || e.Op == OpUnlink),
		e.To != "" && e.Op == OpComplete,
		e.Commit != "" || e.Branch != "" || (e.Fields != nil && e.Fields.Paths != nil):
		return 3
	case e.Clock != nil || e.BackoffSeconds != 0 || e.BackoffMaxSeconds != 0:
		return max(v, 2)
	}
	return v
}
