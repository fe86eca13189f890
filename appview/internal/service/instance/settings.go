// Package instance is the service for running an instance: settings and
// the logo, database status and the one-time SQLite vacuum, statistics
// and feature flags.
package instance

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/core/history"
	"github.com/lexview/lexview/appview/internal/core/indexer"
	"github.com/lexview/lexview/appview/internal/core/labelsub"
	"github.com/lexview/lexview/appview/internal/service/plugins/wasm"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
)

// Store is the persistence the service needs.
type Store interface {
	storage.SettingsStore
	storage.OperatorStore
	storage.ValidationStore
	Dialect() string
}

// Options are what the service works with.
type Options struct {
	Store    Store
	Lexicons interface{ Snapshot() *lexicon.Snapshot }
	Events   *eventlog.Log
	// Features reports which optional subsystems the instance runs, by
	// name (GET /admin/feature-flags).
	Features map[string]bool
	// SyncStatus reports live ingestion and the batch writer for the
	// statistics; nil leaves them out.
	SyncStatus func() map[string]any
	// ValidationModes reports the validation mode of the instance and
	// those of the collections with a mode of their own (GET
	// /admin/stats/validation); nil: reject, none of their own.
	ValidationModes func() (instance string, collections map[string]string)
	// History is the sampled history of the instance's figures and its
	// health (GET /admin/stats/history); nil: none is kept.
	History *history.History
	// Check refuses (with a fail.Error) a value the instance cannot use
	// for key: the settings that override environment variables know
	// their values, and some variables cannot be overridden. nil accepts
	// every value.
	Check func(key, value string) error
	// Changed is called after a setting was stored or deleted through
	// the service, so that what reads settings at use time follows at
	// once on this instance (the others follow through the change feed).
	Changed func(ctx context.Context)
	Now     func() time.Time
	Logger  *slog.Logger
}

// Service runs the instance's operator functions.
type Service struct {
	opt Options
	// logo caches the stored logo for the public endpoints that read it.
	logo atomic.Pointer[cachedLogo]
}

// New returns the service.
func New(opt Options) *Service { return &Service{opt: opt} }

// LogoKey is the SettingsStore blob key of the instance logo.
const LogoKey = "logo"

// MaxLogoSize bounds the logo image (1 MiB).
const MaxLogoSize = 1 << 20

// settingKey is the form of a setting key: 1 to 100 of [a-z0-9_.-].
var settingKey = regexp.MustCompile(`^[a-z0-9_.-]{1,100}$`)

// reservedKeys name other endpoints under /admin/settings/, so they cannot
// be settings.
var reservedKeys = map[string]bool{LogoKey: true, "db-info": true, "xrpc-proxy": true}

// logoTypes are the accepted logo media types; raster types must also be
// what http.DetectContentType sniffs from the body.
var logoTypes = map[string]bool{
	"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true, "image/svg+xml": true,
}

// CheckSettingKey refuses (Invalid) what cannot be a setting key.
func CheckSettingKey(key string) error {
	if !settingKey.MatchString(key) {
		return fail.New(fail.Invalid, "invalid setting key: use 1 to 100 characters of a-z, 0-9, _, . and -")
	}
	if reservedKeys[key] || strings.HasPrefix(key, "identity.") {
		return fail.New(fail.Invalid, "reserved setting key")
	}
	return nil
}

func (s *Service) audit(ctx context.Context, actor, eventType, subject string, detail any) {
	s.opt.Events.Record(ctx, eventlog.Entry{Type: eventType, ActorDID: actor, Subject: subject, Detail: detail})
}

// Settings returns every stored setting but the service identity's
// (identity.*, managed through /admin/service-identity; some are sealed
// keys).
func (s *Service) Settings(ctx context.Context) (map[string]string, error) {
	all, err := s.opt.Store.ListSettings(ctx)
	if err != nil {
		return nil, err
	}
	maps.DeleteFunc(all, func(k, _ string) bool { return strings.HasPrefix(k, "identity.") })
	return all, nil
}

// Setting resolves a setting: the stored value, or envDefault when none
// is stored. A read failure is logged and falls back to envDefault.
func (s *Service) Setting(ctx context.Context, key, envDefault string) string {
	v, err := s.opt.Store.GetSetting(ctx, key)
	if errors.Is(err, storage.ErrNotFound) {
		return envDefault
	}
	if err != nil {
		s.opt.Logger.WarnContext(ctx, "reading setting failed; using the environment value", "key", key, "err", err)
		return envDefault
	}
	return v
}

// PutSetting stores a setting on behalf of actor. A nil value is refused.
func (s *Service) PutSetting(ctx context.Context, actor, key string, value *string) error {
	if err := CheckSettingKey(key); err != nil {
		return err
	}
	if value == nil {
		return fail.New(fail.Invalid, "value is required")
	}
	if err := checkSettingValue(key, *value); err != nil {
		return err
	}
	if s.opt.Check != nil {
		if err := s.opt.Check(key, *value); err != nil {
			return err
		}
	}
	if err := s.opt.Store.PutSetting(ctx, key, *value); err != nil {
		return err
	}
	s.changed(ctx)
	s.audit(ctx, actor, "setting.updated", key, map[string]any{"value": *value})
	return nil
}

// changed tells the instance that a setting changed.
func (s *Service) changed(ctx context.Context) {
	if s.opt.Changed != nil {
		s.opt.Changed(ctx)
	}
}

// DeleteSetting removes a stored setting on behalf of actor: the
// environment's value applies again. A setting Check refuses can be
// deleted (one stored before it was refused).
func (s *Service) DeleteSetting(ctx context.Context, actor, key string) error {
	if err := CheckSettingKey(key); err != nil {
		return err
	}
	err := s.opt.Store.DeleteSetting(ctx, key)
	if errors.Is(err, storage.ErrNotFound) {
		return fail.New(fail.NotFound, "setting not found")
	}
	if err != nil {
		return err
	}
	s.changed(ctx)
	s.audit(ctx, actor, "setting.deleted", key, nil)
	return nil
}

// checkSettingValue refuses (Invalid) a branding value that cannot reach
// a client metadata document: the terms-of-service and privacy-policy
// URLs must be absolute http or https URLs, and the app name at most 200
// characters.
func checkSettingValue(key, value string) error {
	switch key {
	case TermsOfServiceURLKey, PrivacyPolicyURLKey:
		u, err := url.Parse(value)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fail.Invalidf("%s must be an absolute https URL", key)
		}
	case AppNameKey:
		if utf8.RuneCountInString(value) > 200 {
			return fail.New(fail.Invalid, "app_name is longer than 200 characters")
		}
	case eventlog.VerboseSetting:
		if value != "true" && value != "false" {
			return fail.Invalidf("%s must be true or false", key)
		}
	case labelsub.MaxFrameSetting:
		if n, err := strconv.ParseInt(value, 10, 64); err != nil || n < labelsub.MinMaxFrame || n > labelsub.MaxMaxFrame {
			return fail.Invalidf("%s must be a number of bytes from %d to %d", key, labelsub.MinMaxFrame, labelsub.MaxMaxFrame)
		}
	case validationModeSetting:
		if m, ok := indexer.ParseMode(value); !ok || m == indexer.ModeOff {
			return fail.Invalidf("%s must be reject, flag or hide", key)
		}
	case wasm.MaxMemorySetting:
		if n, err := strconv.ParseInt(value, 10, 64); err != nil || n < wasm.MinMaxMemory || n > wasm.MaxMaxMemory {
			return fail.Invalidf("%s must be a number of bytes from %d to %d", key, wasm.MinMaxMemory, wasm.MaxMaxMemory)
		}
	default:
		if c, ok := strings.CutPrefix(key, validationSettingPrefix); ok && lexicon.CheckNSID(c) == nil {
			if _, ok := indexer.ParseMode(value); !ok {
				return fail.Invalidf("%s must be off, reject, flag or hide", key)
			}
		}
	}
	return nil
}

// The validation settings (appview.ValidationModeSetting and
// appview.ValidationSettingPrefix, docs/ingestion.md#validation).
const (
	validationSettingPrefix = "validation."
	validationModeSetting   = validationSettingPrefix + "mode"
)

// ErrLogoTooLarge refuses a logo over MaxLogoSize.
var ErrLogoTooLarge = fail.New(fail.TooLarge, "logo exceeds 1 MiB")

// CheckLogoType refuses (Invalid) a media type that cannot be a logo.
func CheckLogoType(mediaType string) error {
	if !logoTypes[mediaType] {
		return fail.New(fail.Invalid, "logo must be a PNG, JPEG, GIF, WebP or SVG image")
	}
	return nil
}

// PutLogo stores the instance logo on behalf of actor, checking the body
// against its declared type.
func (s *Service) PutLogo(ctx context.Context, actor, mediaType string, data []byte) error {
	if err := CheckLogoType(mediaType); err != nil {
		return err
	}
	if len(data) > MaxLogoSize {
		return ErrLogoTooLarge
	}
	if !isImage(mediaType, data) {
		return fail.Invalidf("body is not a %s image", mediaType)
	}
	err := s.opt.Store.PutBlob(ctx, LogoKey, storage.Blob{ContentType: mediaType, Data: data, UpdatedAt: s.opt.Now()})
	s.logo.Store(nil)
	if err != nil {
		return err
	}
	s.audit(ctx, actor, "logo.updated", LogoKey, map[string]any{"content_type": mediaType, "size_bytes": len(data)})
	return nil
}

// isImage checks the body against its declared type: raster images by
// content sniffing, SVG as UTF-8 text holding an <svg> element.
func isImage(mediaType string, data []byte) bool {
	if len(data) == 0 {
		return false
	}
	if mediaType == "image/svg+xml" {
		return utf8.Valid(data) && bytes.Contains(bytes.ToLower(data), []byte("<svg"))
	}
	return http.DetectContentType(data) == mediaType
}

// DeleteLogo removes the instance logo on behalf of actor.
func (s *Service) DeleteLogo(ctx context.Context, actor string) error {
	err := s.opt.Store.DeleteBlob(ctx, LogoKey)
	s.logo.Store(nil)
	if errors.Is(err, storage.ErrNotFound) {
		return fail.New(fail.NotFound, "logo not found")
	}
	if err != nil {
		return err
	}
	s.audit(ctx, actor, "logo.deleted", LogoKey, nil)
	return nil
}

// FeatureFlags reports the optional subsystems the instance runs, plus
// "sqlite_vacuum": whether the one-time vacuum can be scheduled here.
func (s *Service) FeatureFlags() map[string]bool {
	flags := maps.Clone(s.opt.Features)
	if flags == nil {
		flags = map[string]bool{}
	}
	flags["sqlite_vacuum"] = s.vacuumSupported()
	return flags
}
