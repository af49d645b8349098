package gitcli_test

import (
	"reflect"
	"testing"

	"github.com/bl-backlog/bl/internal/cli/gitcli"
)

// TestExtensionsComplete: bl-git fills every extension the command line
// declares; one left out, bl-git could not run that command itself.
func TestExtensionsComplete(t *testing.T) {
	v := reflect.ValueOf(gitcli.Extensions())
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Errorf("gitcli.Extensions leaves %s unset", v.Type().Field(i).Name)
		}
	}
}
