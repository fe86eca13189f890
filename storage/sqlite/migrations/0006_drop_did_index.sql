-- Every record write paid for a third random index insert (did) that only
-- whole-account deletions used; those now go collection by collection
-- through records_collection_did_newest.
DROP INDEX IF EXISTS records_did;
