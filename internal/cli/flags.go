package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// parseWhen reads a point in time: RFC 3339 ("2026-12-01T09:00:00Z"), a
// date ("2026-12-01", midnight UTC), or a Go duration from now ("36h").
func parseWhen(flag, s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t.UTC(), nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(d).UTC(), nil
	}
	return time.Time{}, usagef(fmt.Sprintf("--%s %q is not a time: use RFC 3339 (2026-12-01T09:00:00Z), a date (2026-12-01) or a duration from now (36h)", flag, s))
}

// notNegative refuses a negative count flag such as --limit.
func notNegative(flag string, n int) error {
	if n < 0 {
		return usagef(fmt.Sprintf("--%s %d is negative", flag, n))
	}
	return nil
}

// parseStatuses checks --status values.
func parseStatuses(in []string) ([]ledger.Status, error) {
	var out []ledger.Status
	for _, s := range in {
		st := ledger.Status(strings.TrimSpace(s))
		if !st.Valid() {
			return nil, usagef(fmt.Sprintf("--status %q is not one of ready, claimed, blocked, done", s))
		}
		out = append(out, st)
	}
	return out, nil
}

// readBody returns the body flag, reading stdin when it is "-".
func readBody(s string) (string, error) {
	if s != "-" {
		return s, nil
	}
	b, err := io.ReadAll(io.LimitReader(os.Stdin, ledger.MaxBodyLen+1))
	if err != nil {
		return "", fmt.Errorf("read body from stdin: %w", err)
	}
	return strings.TrimRight(string(b), "\n"), nil
}

// splitList splits comma-separated values and drops empty entries, so
// "--depends-on A1,A2 --depends-on A3" is three ids.
func splitList(in []string) []string {
	var out []string
	for _, v := range in {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}
