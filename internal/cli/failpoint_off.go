//go:build !bl_failpoints

package cli

// failpointFrom is the ledger's failpoint: none, except in crash-test
// builds (failpoint.go).
func failpointFrom(func(string) string) func(stage string) { return nil }
