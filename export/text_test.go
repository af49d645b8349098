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
		{"\u202eevil\u2066x\u2069\u200f", "evilx", "<U+202E>evil<U+2066>x<U+2069><U+200F>"},
		{"alice\u200b \ufeffsoft\u00ad", "alice\u200b \ufeffsoft\u00ad", "alice<U+200B> <U+FEFF>soft<U+00AD>"},
		{"joined \u2764\ufe0f \u0645\u200c\u0627", "joined \u2764\ufe0f \u0645\u200c\u0627", "joined \u2764\ufe0f \u0645\u200c\u0627"},
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

// TestName: each character the name rule refuses is shown as <U+XXXX>,
// and a literal "<U+" escaped too, so two names never look the same.
func TestName(t *testing.T) {
	for in, want := range map[string]string{
		"alice":                           "alice",
		"Zoë Smith":                       "Zoë Smith",
		"alice\u200b":                     "alice<U+200B>",
		"bob\u202e":                       "bob<U+202E>",
		"a\x1bb\tc\nd":                    "a<U+001B>b<U+0009>c<U+000A>d",
		"nb\u00a0sp":                      "nb<U+00A0>sp",
		"tag\U000e0041":                   "tag<U+E0041>",
		"alice<U+200B>":                   "alice<U+003C>U+200B>",
		"a<b":                             "a<b",
		"\u2764\ufe0f \u0645\u200d\u0627": "\u2764\ufe0f \u0645\u200d\u0627",
		"bad\xff":                         "bad<U+FFFD>",
	} {
		if got := Name(in); got != want {
			t.Errorf("Name(%q) = %q, want %q", in, got, want)
		}
	}
}

func BenchmarkOneLinePlain(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = OneLine("Add the schema migration for the cards table")
	}
}
