package cli

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/alecthomas/kong"

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

// rawString reads a string flag or argument byte for byte. kong's own
// reading passes the value through encoding/json, which turns invalid UTF-8
// into U+FFFD: the ledger could then not refuse text it never saw.
func rawString(ctx *kong.DecodeContext, target reflect.Value) error {
	t, err := ctx.Scan.PopValue("string")
	if err != nil {
		return err
	}
	s, ok := t.Value.(string)
	if !ok {
		s = fmt.Sprint(t.Value)
	}
	target.SetString(s)
	return nil
}

// rawStrings reads a list flag (--label a,b --label c) byte for byte:
// kong's own reading splits on the separator rune by rune, which also turns
// invalid UTF-8 into U+FFFD. A separator escaped with a backslash stays in
// the value, as with kong.
func rawStrings(ctx *kong.DecodeContext, target reflect.Value) error {
	var parts []string
	if ctx.Value.Flag != nil {
		t := ctx.Scan.Pop()
		if t.IsEOL() {
			return fmt.Errorf("missing value")
		}
		parts = splitEscaped(fmt.Sprint(t.Value), ctx.Value.Tag.Sep)
	} else {
		for _, t := range ctx.Scan.PopWhile(func(t kong.Token) bool { return t.IsValue() }) {
			parts = append(parts, fmt.Sprint(t.Value))
		}
	}
	for _, p := range parts {
		target.Set(reflect.Append(target, reflect.ValueOf(p)))
	}
	return nil
}

// splitEscaped splits s at each sep (an ASCII separator; -1 for none) not
// escaped by a backslash, byte for byte.
func splitEscaped(s string, sep rune) []string {
	if sep < 0 || sep >= utf8.RuneSelf {
		return []string{s}
	}
	var out []string
	var tok []byte
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && i+1 < len(s) && s[i+1] == byte(sep):
			tok = append(tok, byte(sep))
			i++
		case c == byte(sep):
			out = append(out, string(tok))
			tok = tok[:0]
		default:
			tok = append(tok, c)
		}
	}
	if len(tok) > 0 {
		out = append(out, string(tok))
	}
	return out
}

// decimalInt reads an integer flag (--priority, --limit, --epoch, ...) in
// base 10 only. kong's own reading follows Go literal syntax, which turns
// "010" into 8, "0x10" into 16 and "1_0" into 10: a priority typed with a
// leading zero must not quietly become another number.
func decimalInt(bits int) kong.MapperFunc {
	return func(ctx *kong.DecodeContext, target reflect.Value) error {
		t, err := ctx.Scan.PopValue("int")
		if err != nil {
			return err
		}
		s := fmt.Sprint(t.Value)
		n, err := strconv.ParseInt(s, 10, bits)
		if err != nil {
			if errors.Is(err, strconv.ErrRange) {
				return fmt.Errorf("%q is out of range", s)
			}
			return fmt.Errorf("%q is not a decimal integer", s)
		}
		target.SetInt(n)
		return nil
	}
}

// idFlag reads create's optional --id: absent is "", but an id given
// empty (--id "", or an unset shell variable) is refused rather than read
// as absent, which would create a card under a generated id. (Commands
// that act on a card read it with cardID or cardFilter.)
func idFlag(id *string) (string, error) {
	switch {
	case id == nil:
		return "", nil
	case *id == "":
		return "", usagef("--id is empty: give a card id, or leave --id out")
	}
	return *id, nil
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
			msg := fmt.Sprintf("--status %q is not one of ready, claimed, review, blocked, done", s)
			if slices.Contains(states, string(st)) {
				// waiting, expired, claimable: where a card stands, not a stored status.
				msg += fmt.Sprintf("; %s is where a card stands: --state %s", st, st)
			}
			return nil, usagef(msg)
		}
		out = append(out, st)
	}
	return out, nil
}

// readBody returns the body flag, reading stdin when it is "-".
func (a *App) readBody(s string) (string, error) {
	if s != "-" {
		return s, nil
	}
	b, err := io.ReadAll(io.LimitReader(a.stdin(), ledger.MaxBodyLen+1))
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
