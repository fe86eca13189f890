package dashboard

// PageInfo describes a page for the tests: its name, path and the
// permission its data needs.
type PageInfo struct{ Name, Path, Perm string }

// Pages lists the dashboard's pages for the tests.
func Pages() []PageInfo {
	out := make([]PageInfo, len(pages))
	for i, p := range pages {
		out[i] = PageInfo{Name: p.Name, Path: p.Path, Perm: p.Perm}
	}
	return out
}
