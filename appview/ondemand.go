package appview

import (
	"github.com/lexview/lexview/appview/internal/core/metrics"
	"github.com/lexview/lexview/backfill"
)

// The on-demand backfill of one account (docs/backfill.md, "On-demand
// backfill of one account"): sign-ins and linked repositories ask for
// the account's repository through the backfill service's triggers
// (newServices, the server's sign-in); operators through POST
// /admin/backfill/accounts; and, with the setting
// backfill.on_demand_queries true, default queries that find nothing of
// an account (the reads service tells backfill.Manager of them).

// queryMisses hands the accounts default queries found nothing of to the
// query trigger (reads.Misses).
type queryMisses struct{ m *backfill.Manager }

func (q queryMisses) Wanted() bool      { return q.m.OnDemandQueries() }
func (q queryMisses) Missed(did string) { q.m.AccountQueried(did) }

// applyOnDemand applies the stored setting of the query trigger.
func (a *App) applyOnDemand(stored map[string]string) {
	a.backfill.SetOnDemandQueries(stored[backfill.SettingOnDemandQueries] == "true")
}

// The metrics count on-demand requests.
var _ backfill.OnDemandMetrics = (*metrics.Metrics)(nil)
