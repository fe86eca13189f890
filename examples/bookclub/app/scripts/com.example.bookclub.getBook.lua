-- One book with its counts, its latest reviews (the link index finds the
-- reviews whose subject is the book, Record.load_all reads them) and the
-- latest accounts that liked it.
local LIKES = "com.example.bookclub.like:subject.uri"
local REVIEWS = "com.example.bookclub.review:subject.uri"

-- view is a book as the club's queries show it (com.example.bookclub.defs#bookView),
-- with its like and review counts from the link index. (Each script
-- stands alone, so listBooks, getBook and searchBooks each have it.)
local function view(b)
  return {
    uri = b.uri, cid = b.cid, addedBy = b.uri:match("^at://([^/]+)/"),
    title = b.title, author = b.author, genre = b.genre, year = b.year, summary = b.summary,
    likeCount = db.backlinkCount{subject = b.uri, source = LIKES}.records,
    reviewCount = db.backlinkCount{subject = b.uri, source = REVIEWS}.records,
  }
end

function handle()
  local book
  if params.uri:match("^at://[^/]+/com%.example%.bookclub%.book/") then
    book = db.get(params.uri)
  end
  if book == nil then
    return {error = "NotFound", message = "no book at " .. params.uri}
  end
  local page = db.backlinks{subject = params.uri, source = REVIEWS, limit = 20}
  local uris = {}
  for i, r in ipairs(page.records) do
    uris[i] = r.uri
  end
  local loaded = Record.load_all(uris)
  local reviews = json.array()
  for i = 1, #uris do -- not ipairs: load_all has nil for a record gone since
    local r = loaded[i]
    if r then
      reviews[#reviews + 1] = {uri = r.uri, author = page.records[i].did, rating = r.rating,
                               text = r.text, createdAt = r.createdAt}
    end
  end
  local likedBy = json.array()
  for _, r in ipairs(db.backlinks{subject = params.uri, source = LIKES, limit = 5}.records) do
    likedBy[#likedBy + 1] = r.did
  end
  return {book = view(book), reviews = reviews, likedBy = likedBy}
end
