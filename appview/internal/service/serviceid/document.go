package serviceid

import (
	"context"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/domains"
	"github.com/lexview/lexview/storage"
)

// Document is a DID document as /.well-known/did.json serves it.
type Document struct {
	Context            []string             `json:"@context"`
	ID                 string               `json:"id"`
	VerificationMethod []DocumentMethod     `json:"verificationMethod"`
	Service            []DocumentServiceRef `json:"service"`
}

// DocumentMethod is a Multikey verification method of a Document.
type DocumentMethod struct {
	ID                 string `json:"id"`
	Type               string `json:"type"`
	Controller         string `json:"controller"`
	PublicKeyMultibase string `json:"publicKeyMultibase"`
}

// DocumentServiceRef is a service entry of a Document.
type DocumentServiceRef struct {
	ID              string `json:"id"`
	Type            string `json:"type"`
	ServiceEndpoint string `json:"serviceEndpoint"`
}

// DocumentFor returns the DID document served on host (a request's Host).
// Only the primary domain serves one, since its DID is the instance's:
// another registered domain, or an unknown host, is NotFound. Its services
// are documentServices, with ids DID#fragment.
func (s *Service) DocumentFor(ctx context.Context, host string) (Document, error) {
	host = domains.NormalHost(host)
	// Only the mode matters here: Get would also open the sealed keys of
	// the other modes, on a public endpoint.
	mode, err := s.setting(ctx, ModeSetting)
	if err != nil {
		return Document{}, err
	}
	if mode != "" && mode != ModeDIDWeb {
		return Document{}, fail.New(fail.NotFound, "no DID document here: the instance's identity is not a did:web (resolve its DID at the PLC directory)")
	}
	primary, ok := s.opt.Domains.Primary(ctx)
	if !ok || domains.Host(primary.URL) != host {
		if _, known := s.opt.Domains.Match(ctx, host); known {
			return Document{}, fail.New(fail.NotFound, "no DID document on this domain: the instance's DID names its primary domain")
		}
		return Document{}, fail.New(fail.NotFound, "unknown host")
	}
	did := domains.DIDWeb(host)
	if did == "" {
		return Document{}, fail.New(fail.NotFound, "the primary domain's host cannot be a did:web")
	}
	methods, err := s.Methods(ctx)
	if err != nil {
		return Document{}, err
	}
	doc := Document{
		Context:            []string{"https://www.w3.org/ns/did/v1", "https://w3id.org/security/multikey/v1"},
		ID:                 did,
		VerificationMethod: []DocumentMethod{},
		Service:            []DocumentServiceRef{},
	}
	for _, m := range methods {
		doc.VerificationMethod = append(doc.VerificationMethod, DocumentMethod{
			ID: did + "#" + m.Fragment, Type: "Multikey", Controller: did, PublicKeyMultibase: m.PublicKeyMultibase,
		})
	}
	services, err := s.documentServices(ctx)
	if err != nil {
		return Document{}, err
	}
	for _, svc := range services {
		doc.Service = append(doc.Service, DocumentServiceRef{ID: did + "#" + svc.Fragment, Type: svc.Type, ServiceEndpoint: svc.Endpoint})
	}
	return doc, nil
}

// serviceRef is a service the instance's DID document lists.
type serviceRef struct {
	Fragment, Type, Endpoint string
}

// errNoEndpoint refuses services without a primary domain to serve them.
var errNoEndpoint = fail.New(fail.Invalid, "service entries need a primary domain: their endpoint is its origin")

// documentServices are the services the instance's DID document (did:web)
// or PLC state (did_plc, attach_account) lists: every service entry that
// is not disabled, its endpoint the primary domain's origin.
func (s *Service) documentServices(ctx context.Context) ([]serviceRef, error) {
	entries, err := s.opt.Store.ListServiceEntries(ctx)
	if err != nil {
		return nil, err
	}
	var out []serviceRef
	for _, e := range entries {
		if e.AccessMode == storage.AccessDisabled {
			continue
		}
		primary, ok := s.opt.Domains.Primary(ctx)
		if !ok {
			return nil, errNoEndpoint
		}
		out = append(out, serviceRef{Fragment: e.Fragment, Type: e.ServiceType, Endpoint: primary.URL})
	}
	return out, nil
}
