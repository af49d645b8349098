package wire

import (
	"testing"
	"time"

	json "github.com/goccy/go-json"
)

// t0 is the time the tests' events start at.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

const year = 365 * 24 * time.Hour

func intp(v int) *int            { return &v }
func strp(v string) *string      { return &v }
func strs(v ...string) *[]string { return &v }

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
