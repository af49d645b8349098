package importer

import (
	"fmt"
	"strings"

	"github.com/bl-backlog/bl/ledger"
)

// noteRoom is the part of a note a split leaves for text: the rest holds
// the "(part 2/3) " marker.
const noteRoom = ledger.MaxNoteLen - 32

// Fit makes an item fit the ledger's limits without losing text, so long
// text is never a reason to stop an import: a title over MaxTitleLen is
// cut and kept whole at the top of the body; a body over MaxBodyLen keeps
// its head and goes on in notes; a note, close note or block reason over
// MaxNoteLen is split across notes; list entries past MaxListEntries go
// to a note. Each case is counted in rep.
func Fit(it *Item, rep *Report) {
	var extra []Note // notes that continue a field, before the source's own
	if len(it.Title) > ledger.MaxTitleLen {
		head, _ := cut(it.Title, ledger.MaxTitleLen)
		it.Body = "Title: " + it.Title + "\n\n" + it.Body
		it.Title = head
		rep.Kept.Add(fmt.Sprintf("titles over %d bytes → cut, whole at the top of the body", ledger.MaxTitleLen))
	}
	if len(it.Body) > ledger.MaxBodyLen {
		head, rest := cut(it.Body, ledger.MaxBodyLen)
		it.Body = head
		for _, c := range chunks(rest, noteRoom) {
			extra = append(extra, Note{Text: c})
		}
		label(extra, "body, continued")
		rep.Kept.Add(fmt.Sprintf("bodies over %d bytes → head in the body, the rest in notes", ledger.MaxBodyLen))
	}
	if len(it.CloseNote) > ledger.MaxNoteLen {
		head, rest := cut(it.CloseNote, noteRoom)
		it.CloseNote = head
		more := splitNote(Note{Text: rest}, "close note, continued")
		extra = append(extra, more...)
		rep.Kept.Add("close notes over 4 KiB → head as the close note, the rest in notes")
	}
	if len(it.BlockedReason) > ledger.MaxNoteLen {
		head, rest := cut(it.BlockedReason, noteRoom)
		it.BlockedReason = head
		extra = append(extra, splitNote(Note{Text: rest}, "block reason, continued")...)
	}
	for name, list := range map[string]*[]string{"labels": &it.Labels, "acceptance criteria": &it.Acceptance} {
		if len(*list) > ledger.MaxListEntries {
			rest := (*list)[ledger.MaxListEntries:]
			*list = (*list)[:ledger.MaxListEntries]
			extra = append(extra, splitNote(Note{Text: name + " past the first " + fmt.Sprint(ledger.MaxListEntries) + ":\n" + strings.Join(rest, "\n")}, "")...)
			rep.Kept.Add(name + " past " + fmt.Sprint(ledger.MaxListEntries) + " → note")
		}
	}
	var notes []Note
	for _, n := range it.Notes {
		if len(n.Author) > ledger.MaxAuthorLen {
			n.Author, _ = cut(n.Author, ledger.MaxAuthorLen)
			rep.Kept.Add(fmt.Sprintf("comment authors over %d bytes → cut", ledger.MaxAuthorLen))
		}
		if len(n.Text) > ledger.MaxNoteLen {
			rep.Kept.Add("comments over 4 KiB → split across notes, in order")
		}
		notes = append(notes, splitNote(n, "")...)
	}
	it.Notes = append(extra, notes...)
}

// splitNote splits a note longer than MaxNoteLen into notes marked
// "(part i/n)", each with the note's author and time.
func splitNote(n Note, what string) []Note {
	if len(n.Text) <= ledger.MaxNoteLen && what == "" {
		return []Note{n}
	}
	parts := chunks(n.Text, noteRoom)
	out := make([]Note, len(parts))
	for i, p := range parts {
		out[i] = Note{Author: n.Author, At: n.At, Text: p}
	}
	if what != "" || len(parts) > 1 {
		label(out, what)
	}
	return out
}

// label marks each of notes as part i of n.
func label(notes []Note, what string) {
	for i := range notes {
		m := fmt.Sprintf("(part %d/%d) ", i+1, len(notes))
		if what != "" {
			m = fmt.Sprintf("(%s, %d/%d) ", what, i+1, len(notes))
		}
		notes[i].Text = m + notes[i].Text
	}
}
