package board

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/lipgloss"

	"github.com/bl-backlog/bl/export"
	"github.com/bl-backlog/bl/ledger"
)

var (
	headStyle = lipgloss.NewStyle().Bold(true)
	selStyle  = lipgloss.NewStyle().Reverse(true)
	dimStyle  = lipgloss.NewStyle().Faint(true)
	warnStyle = lipgloss.NewStyle().Foreground(lipgloss.Color("9"))
)

// View draws the board (or a card's detail) in the terminal's size.
func (m *model) View() string {
	if m.data.err != nil {
		return "bl board: " + m.data.err.Error() + "\n\nq quits"
	}
	if m.detail != nil {
		return m.viewDetail()
	}
	m.build()
	w, h := max(m.width, 40), max(m.height, 10)
	colW := w / len(m.lanes)
	inner := colW - 1 // one column of space between lanes
	bodyH := h - 3    // header, footer, status
	perCard := 2
	visible := max(bodyH/perCard, 1)
	// Keep the selected row in view.
	if m.row < m.top[m.lane] {
		m.top[m.lane] = m.row
	}
	if m.row >= m.top[m.lane]+visible {
		m.top[m.lane] = m.row - visible + 1
	}
	cols := make([]string, len(m.lanes))
	for i := range m.lanes {
		cols[i] = m.viewLane(i, inner, bodyH, visible)
	}
	board := lipgloss.JoinHorizontal(lipgloss.Top, cols...)
	return board + "\n" + fit(m.footer(), w)
}

// viewLane draws lane i as a column inner cells wide and bodyH+1 lines
// high: its head, the visible cards from its scroll position, and how
// many more there are.
func (m *model) viewLane(i, inner, bodyH, visible int) string {
	l := &m.lanes[i]
	var lines []string
	head := fmt.Sprintf("%s %d", strings.ToUpper(l.Name), len(l.Cards))
	if i == m.lane {
		head = "[" + head + "]"
	}
	lines = append(lines, headStyle.Render(fit(head, inner)))
	top := min(m.top[i], max(len(l.Cards)-1, 0))
	for j := top; j < len(l.Cards) && j < top+visible; j++ {
		first, second := m.cardLines(l, &l.Cards[j], i == m.lane && j == m.row, inner)
		lines = append(lines, first, second)
	}
	if n := len(l.Cards) - (top + visible); n > 0 {
		lines = append(lines, dimStyle.Render(fit(fmt.Sprintf(" +%d more", n), inner)))
	}
	for len(lines) < bodyH+1 {
		lines = append(lines, strings.Repeat(" ", inner))
	}
	return lipgloss.NewStyle().Width(inner).MarginRight(1).Render(strings.Join(lines[:bodyH+1], "\n"))
}

// cardLines are a card's two lines in its lane: id and priority, then
// whoever holds or sent it (or its title), styled as selected, with an
// expired lease, or done.
func (m *model) cardLines(l *Lane, c *ledger.Card, sel bool, inner int) (first, second string) {
	mark := " "
	if sel {
		mark = ">"
	}
	first = fmt.Sprintf("%s%s p%d", mark, oneLine(c.ID), c.Priority)
	second = " " + oneLine(c.Title)
	if c.Assignee != "" {
		second = fmt.Sprintf(" @%s %s", export.Name(c.Assignee), oneLine(c.Title))
	}
	if c.ClaimOwner != "" && (l.Name == "claimed") {
		second = fmt.Sprintf(" %s %s", export.Name(c.ClaimOwner), leaseLeft(c, m.src.Now()))
	}
	if l.Name == "review" && c.SubmittedBy != "" {
		second = " by " + oneLine(c.SubmittedBy)
	}
	first, second = fit(first, inner), fit(second, inner)
	switch {
	case sel:
		first, second = selStyle.Render(first), selStyle.Render(second)
	case m.data.standing[c.ID].LeaseExpired:
		second = warnStyle.Render(second)
	case l.Name == "done":
		first, second = dimStyle.Render(first), dimStyle.Render(second)
	}
	return first, second
}

// footer is the board's last line: the keys, or the question or search
// under way, or a status message.
func (m *model) footer() string {
	foot := "←→↑↓ move  enter card  / search  q quit"
	if c := m.selected(); c != nil && m.data.standing[c.ID].State == ledger.StateReview {
		foot = "a approve  r reject  " + foot
	}
	switch {
	case m.verdict == "approve":
		foot = "approve " + oneLine(m.verdictID) + "? y approves, any other key cancels"
	case m.verdict == "reject":
		foot = "reject " + oneLine(m.verdictID) + ", why: " + oneLine(m.reason) + "_  (enter sends, esc cancels)"
	case m.searching:
		foot = "search: " + oneLine(m.query) + "_  (enter keeps, esc clears)"
	case m.query != "":
		foot = "search: " + oneLine(m.query) + "  (esc clears)  " + foot
	}
	if m.status != "" {
		foot = m.status
	}
	return foot
}

func (m *model) viewDetail() string {
	w, h := max(m.width, 40), max(m.height, 10)
	lines := m.detailLines
	bodyH := h - 1
	top := min(m.detailTop, max(len(lines)-bodyH, 0))
	m.detailTop = top
	var b strings.Builder
	for i := top; i < len(lines) && i < top+bodyH; i++ {
		l := fit(lines[i], w)
		if i == 0 {
			l = headStyle.Render(l)
		}
		b.WriteString(l + "\n")
	}
	for i := len(lines) - top; i < bodyH; i++ {
		b.WriteString("\n")
	}
	b.WriteString(fit("↑↓ scroll  esc back  q quit", w))
	return b.String()
}

// fit cuts s to width cells, padding it to exactly that.
func fit(s string, width int) string {
	if width <= 0 {
		return ""
	}
	if lipgloss.Width(s) > width {
		r := []rune(s)
		for len(r) > 0 && lipgloss.Width(string(r))+1 > width {
			r = r[:len(r)-1]
		}
		s = string(r) + "…"
	}
	return s + strings.Repeat(" ", max(width-lipgloss.Width(s), 0))
}
