package cli

import (
	"os"
	"strings"

	"github.com/bl-backlog/bl/ledger"
)

// Colour marks: private-use runes that stand for a colour (or its end)
// while human output is laid out, so tabwriter counts each as one cell
// and every coloured cell of a column by the same two; emit turns them
// into ANSI colours on a terminal, or drops them. User text cannot carry
// them (text and body printing strip them).
const (
	markFirst = '\uE000'
	markEnd   = '\uE0FF'
)

// stateColours are the ANSI foreground colours of the states.
var stateColours = map[string]string{
	ledger.StateReady:   "32", // green: take it
	ledger.StateWaiting: "33", // yellow
	ledger.StateClaimed: "36", // cyan: someone is on it
	ledger.StateExpired: "35", // magenta: a lease ran out
	ledger.StateBlocked: "31", // red
	ledger.StateDone:    "90", // grey
	ledger.StateReview:  "34", // blue: waits for a reviewer
	"":                  "39", // default: a header cell, aligned with the rest
}

// colourCodes numbers the colours for the marks.
var colourCodes = []string{"32", "33", "36", "35", "31", "90", "39", "34"}

// paint marks s to print in the colour of state.
func paint(state, s string) string {
	code, ok := stateColours[state]
	if !ok {
		return s
	}
	for i, c := range colourCodes {
		if c == code {
			return string(rune(markFirst+i)) + s + string(markEnd)
		}
	}
	return s
}

// colourOn: human output to a terminal, unless NO_COLOR is set (any value,
// no-color.org) or TERM is dumb; CLICOLOR_FORCE=1 colours a pipe too.
func (a *App) colourOn() bool {
	if a.JSON || a.getenv("NO_COLOR") != "" || a.getenv("TERM") == "dumb" {
		return false
	}
	if a.getenv("CLICOLOR_FORCE") == "1" {
		return true
	}
	f, ok := a.Stdout.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// applyColour turns the marks in s into ANSI colours, or drops them.
func applyColour(s string, on bool) string {
	if !strings.ContainsFunc(s, isMark) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case !isMark(r):
			b.WriteRune(r)
		case !on:
		case r == markEnd:
			b.WriteString("\x1b[0m")
		default:
			b.WriteString("\x1b[" + colourCodes[r-markFirst] + "m")
		}
	}
	return b.String()
}

func isMark(r rune) bool { return r >= markFirst && r <= markEnd }

// stripMarks removes colour marks from user text.
func stripMarks(s string) string {
	if !strings.ContainsFunc(s, isMark) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if isMark(r) {
			return -1
		}
		return r
	}, s)
}
