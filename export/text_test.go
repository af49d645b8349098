package export

import "testing"

func TestPrintableAndOneLine(t *testing.T) {
	for _, tc := range []struct{ in, printable, oneLine string }{
		{"plain title", "plain title", "plain title"},
		{"  spaced  out ", "  spaced  out ", "spaced out"},
		{"\x1b]0;x\a\nE9 forged", "]0;x\nE9 forged", "]0;x E9 forged"},
		{"a\rb\tc\vd\fe\u0085f", "a b\tc d e f", "a b c d e f"},
		{"C1 \u009b31m csi", "C1 31m csi", "C1 31m csi"},
		{"del\x7f", "del", "del"},
		{"\u202eevil\u2066x\u2069\u200f", "evilx", "evilx"},
		{"line\u2028sep", "line sep", "line sep"},
		{"bad \xff utf8", "bad  utf8", "bad utf8"},
		{"wide 漢字 ✓", "wide 漢字 ✓", "wide 漢字 ✓"},
		{"body\n\n  indented", "body\n\n  indented", "body indented"},
	} {
		if got := Printable(tc.in); got != tc.printable {
			t.Errorf("Printable(%q) = %q, want %q", tc.in, got, tc.printable)
		}
		if got := OneLine(tc.in); got != tc.oneLine {
			t.Errorf("OneLine(%q) = %q, want %q", tc.in, got, tc.oneLine)
		}
	}
}

func BenchmarkOneLinePlain(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = OneLine("Add the schema migration for the cards table")
	}
}
