-- The index hook of books (record.index:com.example.bookclub.book): every
-- book is stored as this returns it. It trims the title and author,
-- lowercases the genre (so that listBooks' genre filter finds a book
-- filed under "Fantasy"), and adds sortTitle, the title in lower case
-- without a leading article, which listBooks sorts by through a declared
-- value index (app.json).
local ARTICLES = {"the ", "a ", "an "}

local function trim(s)
  return (s:match("^%s*(.-)%s*$"))
end

function handle()
  if action == "delete" then
    return true
  end
  if type(record.title) ~= "string" or type(record.author) ~= "string" then
    return nil -- not a book we can show: not indexed
  end
  record.title = trim(record.title)
  record.author = trim(record.author)
  if type(record.genre) == "string" then
    record.genre = trim(record.genre):lower()
  end
  local sort = record.title:lower()
  for _, article in ipairs(ARTICLES) do
    if sort:sub(1, #article) == article then
      sort = sort:sub(#article + 1)
      break
    end
  end
  record.sortTitle = sort
  return record
end
