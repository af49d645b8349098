package serve

import "github.com/bl-backlog/bl/ledger"

// bl serve reads and writes a *ledger.Backlog through the methods it names.
var _ Backlog = (*ledger.Backlog)(nil)
