-- A review arriving (record.create:com.example.bookclub.review) is
-- indexed only when it reviews one of the club's books: a review whose
-- subject is any other record is skipped, so it never counts.
function handle()
  local subject = type(record.subject) == "table" and record.subject.uri or nil
  if type(subject) ~= "string" or not subject:match("^at://[^/]+/com%.example%.bookclub%.book/[^/]+$") then
    return nil
  end
  return true
end
