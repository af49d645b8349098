package cli

// BoardCmd shows the live board in the terminal (package board). Like
// serve and mcp it runs in bl-git: the lean bl hands it over, so the
// terminal libraries never weigh on the hot commands' start-up.
type BoardCmd struct{}

func (BoardCmd) Help() string {
	return `Shows the backlog as lanes by where cards stand (ready, waiting, claimed,
review, blocked, done): each card with its id, priority, for a claim the
owner and the lease left, and for a card in review who sent it. The board redraws as events arrive (the same
stream as bl watch) and fits the terminal; 80x24 is enough. NO_COLOR
turns colour off.

Keys:

    arrows (or h j k l)   move between lanes and cards
    enter                 the card's detail: fields, notes, history
    /                     search (as bl search); enter keeps, esc clears
    a                     approve the selected card in review (y confirms),
                          as bl approve: the sender cannot approve
    r                     reject it: type the reason, enter sends
    esc                   back from the detail, or clear the search
    q, ctrl+c             quit

Examples:

    bl board
    NO_COLOR=1 bl board` + exitCodesHelp
}

func (c *BoardCmd) gitWork(*App) string { return "bl board" }

func (c *BoardCmd) Run(a *App) error {
	if a.ext.Board == nil { // the lean bl
		return a.handover("bl board")
	}
	return a.ext.Board(a, c)
}
