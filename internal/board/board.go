// Package board is bl board: the backlog as a live board in the terminal,
// built with Bubble Tea. Lanes by where cards stand, arrow keys to move,
// Enter for a card's detail (history and notes), / to search, a and r to
// approve or reject a card in review, q to quit.
// It redraws from the watch stream (fsnotify) as events arrive; a
// one-second tick only counts leases down. Only bl-git links it, so the
// terminal libraries never weigh on the lean bl's start-up.
package board

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/bl-backlog/bl/export"
	"github.com/bl-backlog/bl/internal/search"
	"github.com/bl-backlog/bl/ledger"
	"github.com/bl-backlog/bl/ledger/watch"
)

// Lane is one column of the board.
type Lane struct {
	Name  string
	Cards []ledger.Card
}

// lanes are the board's columns, by the state a card stands in; expired
// leases share the claimed lane (marked). A card in review has a lane of
// its own: it is not done until a reviewer says so.
var laneNames = []string{"ready", "waiting", "claimed", "review", "blocked", "done"}

func laneOf(state string) int {
	switch state {
	case ledger.StateReady:
		return 0
	case ledger.StateWaiting:
		return 1
	case ledger.StateClaimed, ledger.StateExpired:
		return 2
	case ledger.StateReview:
		return 3
	case ledger.StateBlocked:
		return 4
	}
	return 5
}

// Source is what the board reads: the backlog, and the clock; and how a
// reviewer's verdict is written (as bl approve and bl reject write it).
type Source struct {
	B       Backlog
	Now     func() time.Time
	Approve func(ctx context.Context, id string) error
	Reject  func(ctx context.Context, id, reason string) error
}

// Backlog is what the board reads of a backlog (a *ledger.Backlog): the
// cards and where they stand, the newest history, a view of the state, and
// the directory it watches.
type Backlog interface {
	Dir() string
	List(f ledger.Filter, sortBy string) ([]ledger.Card, error)
	NewestHistory(f ledger.HistoryFilter, n int, fn func(e *ledger.Event, conflict *ledger.Conflict) error) (ledger.Cursor, error)
	Standings(cards []ledger.Card) ([]ledger.Standing, error)
	View(fn func(s *ledger.State, now time.Time) error) error
}

// snapshot is the board's data at one moment.
type snapshot struct {
	cards    []ledger.Card
	standing map[string]ledger.Standing
	err      error
}

func (s Source) read() snapshot {
	cards, err := s.B.List(ledger.Filter{}, ledger.SortClaim)
	if err != nil {
		return snapshot{err: err}
	}
	st, err := s.B.Standings(cards)
	if err != nil {
		return snapshot{err: err}
	}
	m := make(map[string]ledger.Standing, len(cards))
	for i, c := range cards {
		m[c.ID] = st[i]
	}
	return snapshot{cards: cards, standing: m}
}

// history is the newest events of one card, oldest first, one line each.
func (s Source) history(id string, n int) []string {
	var out []string
	_, err := s.B.NewestHistory(ledger.HistoryFilter{Card: id}, n, func(e *ledger.Event, c *ledger.Conflict) error {
		line := fmt.Sprintf("%s  %-9s %s", e.At.UTC().Format("2006-01-02 15:04"), e.Op, e.Actor)
		if e.Owner != "" {
			line += fmt.Sprintf(" owner=%s#%d", e.Owner, e.Epoch)
		}
		if e.Reason != "" {
			line += " " + firstLine(e.Reason)
		}
		if c != nil {
			line += "  (rejected)"
		}
		out = append(out, line)
		return nil
	})
	if err != nil {
		out = append(out, "history: "+err.Error())
	}
	return out
}

type (
	changedMsg struct{ card string } // the backlog changed: an event on card
	tickMsg    time.Time             // a second passed: leases count down
	dataMsg    snapshot              // a fresh read
	followErr  struct{ error }
	verdictMsg struct { // a verdict was written, or refused
		what string
		err  error
	}
)

// Run shows the board until q or ctx ends.
func Run(ctx context.Context, src Source) error {
	for _, f := range []*os.File{os.Stdin, os.Stdout} {
		if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
			return ledger.Errorf(ledger.ErrInvalid, "bl board needs a terminal (standard input and output); for a snapshot use bl list or bl export")
		}
	}
	if os.Getenv("NO_COLOR") != "" {
		lipgloss.SetColorProfile(termenv.Ascii)
	}
	m := newModel(src)
	m.ctx = ctx
	m.data = src.read()
	if m.data.err != nil {
		return m.data.err
	}
	p := tea.NewProgram(m, tea.WithAltScreen(), tea.WithContext(ctx))
	var base ledger.Cursor
	if err := src.B.View(func(st *ledger.State, _ time.Time) error {
		if last := st.Last(); last.ID != "" {
			base = ledger.CursorOf(&last)
		}
		return nil
	}); err != nil {
		return err
	}
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		err := watch.Follow(fctx, src.B.Dir(), base, func(e *ledger.Event) error {
			p.Send(changedMsg{e.Card})
			return nil
		})
		if err != nil {
			p.Send(followErr{err})
		}
	}()
	_, err := p.Run()
	if err == tea.ErrProgramKilled && ctx.Err() != nil {
		return nil
	}
	return err
}

// model is the board's state for Bubble Tea.
type model struct {
	src           Source
	data          snapshot
	lanes         []Lane
	lane, row     int
	top           []int // first row shown, per lane
	width, height int
	detail        *ledger.Card
	detailLines   []string
	detailTop     int
	searching     bool
	query         string
	status        string
	pending       bool   // a read is on its way
	selID         string // the selected card, kept across redraws
	detailStale   bool   // the card in the detail changed since it was read
	verdict       string // "approve" or "reject" while asking about verdictID
	verdictID     string
	reason        string // the rejection's reason, as typed
	ctx           context.Context
}

func newModel(src Source) *model {
	return &model{src: src, width: 80, height: 24, top: make([]int, len(laneNames))}
}

func (m *model) Init() tea.Cmd { return tick() }

func tick() tea.Cmd {
	return tea.Tick(time.Second, func(t time.Time) tea.Msg { return tickMsg(t) })
}

func (m *model) reload() tea.Cmd {
	if m.pending {
		return nil
	}
	m.pending = true
	return func() tea.Msg { return dataMsg(m.src.read()) }
}

func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case changedMsg:
		// The detail reads the card's history again only when the card
		// changed: history is read from the whole log.
		m.detailStale = m.detailStale || (m.detail != nil && (msg.card == m.detail.ID || msg.card == ""))
		return m, m.reload()
	case dataMsg:
		m.pending = false
		m.data = snapshot(msg)
		if m.detail != nil && m.detailStale {
			m.detailStale = false
			m.openDetail(m.detail.ID)
		}
	case tickMsg:
		return m, tick()
	case followErr:
		m.status = "watch stopped: " + msg.Error()
	case verdictMsg:
		m.status = msg.what
		if msg.err != nil {
			m.status = "refused: " + oneLine(msg.err.Error())
		}
	case tea.KeyMsg:
		return m, m.key(msg)
	}
	return m, nil
}

// key handles a key press; it returns tea.Quit to leave.
func (m *model) key(k tea.KeyMsg) tea.Cmd {
	if k.Type == tea.KeyCtrlC {
		return tea.Quit
	}
	if !m.searching && m.detail == nil && k.Type == tea.KeyRunes && len(k.Runes) > 1 && k.Runes[0] == '/' {
		// Keys typed fast arrive together: "/login" is / then the query.
		m.searching, m.query = true, ""
		k.Runes = k.Runes[1:]
	}
	switch {
	case m.verdict != "":
		return m.verdictKey(k)
	case m.searching:
		m.searchKey(k)
		return nil
	case m.detail != nil:
		return m.detailKey(k)
	}
	return m.boardKey(k)
}

// searchKey edits the search query; any change starts the lanes from
// their top again.
func (m *model) searchKey(k tea.KeyMsg) {
	switch k.Type {
	case tea.KeyEnter:
		m.searching = false
	case tea.KeyEsc:
		m.searching, m.query = false, ""
	case tea.KeyBackspace:
		if r := []rune(m.query); len(r) > 0 {
			m.query = string(r[:len(r)-1])
		}
	case tea.KeyRunes, tea.KeySpace:
		m.query += string(k.Runes)
	}
	m.row, m.selID = 0, ""
	clear(m.top)
}

// detailKey scrolls a card's detail or goes back to the board.
func (m *model) detailKey(k tea.KeyMsg) tea.Cmd {
	switch k.String() {
	case "q":
		return tea.Quit
	case "esc", "enter", "backspace", "left", "h":
		m.detail = nil
	case "down", "j":
		m.detailTop++
	case "up", "k":
		m.detailTop = max(m.detailTop-1, 0)
	}
	return nil
}

// boardKey moves over the lanes, opens a card, starts a search or a
// verdict on a card in review.
func (m *model) boardKey(k tea.KeyMsg) tea.Cmd {
	switch k.String() {
	case "q":
		return tea.Quit
	case "left", "h":
		m.lane = (m.lane + len(laneNames) - 1) % len(laneNames)
		m.row, m.selID = 0, ""
	case "right", "l", "tab":
		m.lane = (m.lane + 1) % len(laneNames)
		m.row, m.selID = 0, ""
	case "up", "k":
		m.row, m.selID = max(m.row-1, 0), ""
	case "down", "j":
		m.row, m.selID = m.row+1, ""
	case "enter":
		if c := m.selected(); c != nil {
			m.openDetail(c.ID)
		}
	case "/":
		m.searching, m.query = true, ""
	case "esc":
		m.query = ""
	case "a", "r":
		c := m.selected()
		if c == nil || m.data.standing[c.ID].State != ledger.StateReview {
			m.status = "a and r decide a card in the review lane"
			return nil
		}
		m.verdict, m.verdictID, m.reason = map[string]string{"a": "approve", "r": "reject"}[k.String()], c.ID, ""
		m.status = ""
	}
	return nil
}

// verdictKey reads the answer to "approve X?" (y) or "reject X: why?"
// (a line of text), and writes the verdict.
func (m *model) verdictKey(k tea.KeyMsg) tea.Cmd {
	id := m.verdictID
	switch {
	case k.Type == tea.KeyEsc:
		m.verdict, m.status = "", "nothing written"
		return nil
	case m.verdict == "approve":
		m.verdict = ""
		if k.String() != "y" {
			m.status = "nothing written"
			return nil
		}
		m.status = "approving " + id + "…"
		approve := m.src.Approve
		return func() tea.Msg {
			return verdictMsg{"approved " + id + ": done", approve(m.ctx, id)}
		}
	case k.Type == tea.KeyEnter:
		reason := strings.TrimSpace(m.reason)
		if reason == "" {
			m.status = "say why the work is not accepted (esc cancels)"
			return nil
		}
		m.verdict = ""
		m.status = "rejecting " + id + "…"
		reject := m.src.Reject
		return func() tea.Msg {
			return verdictMsg{"rejected " + id + ": ready again", reject(m.ctx, id, reason)}
		}
	case k.Type == tea.KeyBackspace:
		if r := []rune(m.reason); len(r) > 0 {
			m.reason = string(r[:len(r)-1])
		}
	case k.Type == tea.KeyRunes, k.Type == tea.KeySpace:
		m.reason += string(k.Runes)
	}
	return nil
}

// build sorts the cards into lanes, search applied.
func (m *model) build() {
	cards := m.data.cards
	if m.query != "" {
		cards = search.Keep(append([]ledger.Card(nil), cards...), m.query)
	}
	m.lanes = make([]Lane, len(laneNames))
	for i, n := range laneNames {
		m.lanes[i].Name = n
	}
	for _, c := range cards {
		i := laneOf(m.data.standing[c.ID].State)
		m.lanes[i].Cards = append(m.lanes[i].Cards, c)
	}
	// The selection follows its card while it stays in the lane.
	lane := m.lanes[m.lane].Cards
	for j := range lane {
		if lane[j].ID == m.selID {
			m.row = j
		}
	}
	if m.row >= len(lane) {
		m.row = max(len(lane)-1, 0)
	}
	m.selID = ""
	if m.row < len(lane) {
		m.selID = lane[m.row].ID
	}
}

func (m *model) selected() *ledger.Card {
	m.build()
	l := m.lanes[m.lane].Cards
	if m.row < len(l) {
		return &l[m.row]
	}
	return nil
}

// openDetail shows card id: its fields, notes and history.
func (m *model) openDetail(id string) {
	var c *ledger.Card
	for i := range m.data.cards {
		if m.data.cards[i].ID == id {
			c = &m.data.cards[i]
		}
	}
	if c == nil {
		m.detail = nil
		return
	}
	m.detail = c
	st := m.data.standing[c.ID]
	now := m.src.Now()
	var b []string
	b = append(b, fmt.Sprintf("%s  %s", c.ID, oneLine(c.Title)))
	b = append(b, fmt.Sprintf("state %s  priority %d  phase %s", st.State, c.Priority, dash(export.Name(c.Phase))))
	if c.ClaimOwner != "" {
		b = append(b, fmt.Sprintf("owner %s#%d  lease %s", export.Name(c.ClaimOwner), c.ClaimEpoch, leaseLeft(c, now)))
	}
	if c.Assignee != "" {
		b = append(b, "assignee "+export.Name(c.Assignee))
	}
	if len(c.Labels) > 0 {
		b = append(b, "labels "+names(c.Labels))
	}
	if len(c.DependsOn) > 0 {
		b = append(b, "depends on "+strings.Join(c.DependsOn, ", "))
	}
	if len(st.WaitingOn) > 0 {
		b = append(b, "waiting on "+strings.Join(st.WaitingOn, ", "))
	}
	if c.BlockedReason != "" {
		b = append(b, "blocked: "+oneLine(c.BlockedReason))
	}
	if c.Body != "" {
		b = append(b, "")
		for _, l := range strings.Split(c.Body, "\n") {
			b = append(b, "  "+oneLine(l))
		}
	}
	if len(c.Notes) > 0 {
		b = append(b, "", "notes")
		for _, n := range c.Notes {
			b = append(b, fmt.Sprintf("  %s  %s: %s", n.At.UTC().Format("2006-01-02 15:04"), oneLine(n.Author), oneLine(n.Text)))
		}
	}
	b = append(b, "", "history")
	for _, h := range m.src.history(c.ID, 50) {
		b = append(b, "  "+oneLine(h))
	}
	m.detailLines = b
}

func leaseLeft(c *ledger.Card, now time.Time) string {
	if c.LeaseExpiresAt == nil {
		return "-"
	}
	d := c.LeaseExpiresAt.Sub(now)
	if d <= 0 {
		return "expired"
	}
	return shortDuration(d)
}

func shortDuration(d time.Duration) string {
	switch {
	case d >= time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	case d >= time.Minute:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%ds", int(d.Seconds()))
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return oneLine(s)
}

// oneLine keeps user text on one line with nothing a terminal acts on.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029' || (r >= '\u202a' && r <= '\u202e') || (r >= '\u2066' && r <= '\u2069') {
			return ' '
		}
		return r
	}, s)
}

// names is labels as export.Name shows them (a hidden character as
// <U+XXXX>), comma-separated.
func names(ls []string) string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = export.Name(l)
	}
	return strings.Join(out, ", ")
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
