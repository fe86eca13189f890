package apptest_test

import (
	"context"
	"fmt"
	"os"

	"github.com/lexview/lexview/appview/apptest"
)

// An app's Go test can run the tests its folder declares, as
// `appview test DIR` does.
func Example() {
	suite, err := apptest.Load("testdata/app")
	if err != nil {
		fmt.Println(err)
		return
	}
	report := apptest.Run(context.Background(), suite, apptest.Options{
		Select: func(name string) bool { return name == "procedures" },
	})
	report.Print(os.Stdout)
	// Output:
	// PASS procedures (5 steps)
	// ok: 1 test passed
}
