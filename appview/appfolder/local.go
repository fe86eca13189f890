package appfolder

import (
	"context"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
)

// local is a Target over an App: its database, through the same services
// the admin API calls.
type local struct{ app *appview.App }

// Local returns the Target of app. Its definition leaves out the network
// lexicons (docs/lexicons.md#network-lexicons): they are not an app's, so
// they are neither exported nor pruned. Changes are audited in app's event log
// with no actor, as the library API's are.
func Local(app *appview.App) Target { return local{app} }

func (t local) Read(ctx context.Context) (*Definition, error) {
	def := &Definition{Lexicons: map[string]Lexicon{}, Scripts: map[string]string{}}
	network, err := t.app.Store().ListNetworkLexicons(ctx)
	if err != nil {
		return nil, err
	}
	for _, l := range t.app.Lexicons().Snapshot().All() {
		def.Lexicons[l.ID] = fromRegistry(l)
	}
	for _, n := range network { // not the app's: fetched from their authority
		delete(def.Lexicons, n.NSID)
	}
	list, err := t.app.Scripts().List(ctx)
	if err != nil {
		return nil, err
	}
	for _, sc := range list {
		def.Scripts[sc.Trigger] = sc.Source
	}
	indexes, err := t.app.Indexes().List(ctx, "")
	if err != nil {
		return nil, err
	}
	for _, f := range indexes {
		def.Indexes = append(def.Indexes, storage.FieldIndexSpec{Collection: f.Collection, Path: f.Path, Kind: f.Kind})
	}
	sortIndexes(def.Indexes)
	if def.Variables, err = t.app.Scripts().VariableNames(ctx); err != nil {
		return nil, err
	}
	return def, nil
}

// fromRegistry is a stored lexicon as a definition holds it.
func fromRegistry(l *lexicon.Lexicon) Lexicon {
	out := Lexicon{ID: l.ID, Kind: l.Kind, Document: l.Raw, Script: l.Script, IndexHook: l.IndexHook, Revision: l.Revision}
	if l.Kind == lexicon.KindRecord {
		out.Backfill = new(l.Backfill)
	} else {
		out.TargetCollection = l.TargetCollection
	}
	return out
}

func (t local) CheckScript(_ context.Context, source string) error {
	return t.app.Scripts().Check(source)
}

func (t local) PutLexicon(ctx context.Context, l Lexicon) ([]string, error) {
	up := lexicon.Upload{Document: l.Document, TargetCollection: l.TargetCollection, Script: l.Script,
		IndexHook: l.IndexHook, Backfill: l.Backfill}
	if old, ok := t.app.Lexicons().Snapshot().Get(l.ID); ok && up.Backfill == nil && l.Kind == lexicon.KindRecord {
		up.Backfill = new(old.Backfill) // a folder that does not say keeps the instance's
	}
	res, err := t.app.Lexicons().Put(ctx, up)
	return res.Warnings, err
}

func (t local) DeleteLexicon(ctx context.Context, id string) error {
	return t.app.Lexicons().Delete(ctx, id)
}

func (t local) PutScript(ctx context.Context, trigger, source string) error {
	_, _, err := t.app.Scripts().Put(ctx, trigger, source)
	return err
}

func (t local) DeleteScript(ctx context.Context, trigger string) error {
	list, err := t.app.Scripts().List(ctx)
	if err != nil {
		return err
	}
	for _, sc := range list {
		if sc.Trigger == trigger {
			return t.app.Scripts().Delete(ctx, sc.ID)
		}
	}
	return nil // already gone
}

func (t local) DeclareIndex(ctx context.Context, spec storage.FieldIndexSpec) error {
	_, _, err := t.app.Indexes().Declare(ctx, spec)
	return err
}

func (t local) DropIndex(ctx context.Context, spec storage.FieldIndexSpec) error {
	list, err := t.app.Indexes().List(ctx, spec.Collection)
	if err != nil {
		return err
	}
	for _, f := range list {
		if f.Path == spec.Path && f.Kind == spec.Kind {
			return t.app.Indexes().Drop(ctx, f.ID)
		}
	}
	return nil // already gone
}
