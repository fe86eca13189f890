-- The caller likes a book: a com.example.bookclub.like record, pointing at
-- the book's current version, is written to the caller's repository
-- through their PDS session, and indexed before the answer. A second like
-- of the same book is refused.
local LIKES = "com.example.bookclub.like:subject.uri"

function handle()
  local uri = input.uri
  local book
  if uri:match("^at://[^/]+/com%.example%.bookclub%.book/") then
    book = db.get(uri)
  end
  if book == nil then
    return {error = "NotFound", message = "no book at " .. uri}
  end
  local mine = db.backlinks{subject = uri, source = LIKES, did = caller.did, limit = 1}
  if mine.total > 0 then
    return {error = "AlreadyLiked", message = "you like this book already"}
  end
  local like = Record("com.example.bookclub.like", {subject = {uri = book.uri, cid = book.cid}, createdAt = now()})
  like:save()
  return {uri = like.uri, likeCount = db.backlinkCount{subject = uri, source = LIKES}.records}
end
