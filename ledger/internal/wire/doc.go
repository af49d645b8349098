// Package wire is the backlog's format: the events of ledger.jsonl and the
// lines of snapshot.json as Go types (schema.go), their codec (generated
// into codec_gen.go), the framing every file shares (framing.go), the rules
// an event or card must meet to be read at all (validate.go, stamps.go),
// the line versions (version.go) and the errors the ledger returns
// (errors.go). It is a leaf: it imports nothing of the module, and it reads
// and writes bytes it is given, never files. The byte-level specification
// is package ledger's documentation; package ledger names these types with
// aliases, so callers outside it never import this package.
package wire
