-- The club's books in title order (sortTitle, which the books' index hook
-- adds, through a declared value index), optionally of one genre (a
-- declared value index on genre), with the number of books the list has
-- (db.count, answered from the same index).
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
  local filter
  if params.genre and params.genre ~= "" then
    filter = {field = "genre", value = params.genre:lower()}
  end
  local page = db.query{
    collection = "com.example.bookclub.book", filter = filter,
    sort = "sortTitle", sortDirection = "asc",
    limit = tonumber(params.limit) or 20, cursor = params.cursor,
  }
  local books = json.array()
  for i, b in ipairs(page.records) do
    books[i] = view(b)
  end
  local total = db.count{collection = "com.example.bookclub.book", filter = filter}
  return {books = books, total = total, cursor = page.cursor}
end
