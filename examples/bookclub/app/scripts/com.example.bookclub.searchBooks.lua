-- Full-text search of the books' titles, authors and summaries (three
-- declared text indexes), best matches first. A malformed query is the
-- declared error InvalidQuery.
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
  local ok, page = pcall(db.search, {
    collection = "com.example.bookclub.book", query = params.q,
    limit = tonumber(params.limit) or 20, cursor = params.cursor,
  })
  if not ok then
    return {error = "InvalidQuery", message = tostring(page)}
  end
  local books = json.array()
  for i, b in ipairs(page.records) do
    books[i] = view(b)
  end
  return {books = books, cursor = page.cursor}
end
