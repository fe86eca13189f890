-- Full-text search over the posts' text (a declared text index), best
-- matches first. A malformed query is reported in the answer.
function handle()
  local ok, page = pcall(db.search, {
    collection = "com.example.social.post", query = params.q,
    limit = tonumber(params.limit) or 20, cursor = params.cursor,
  })
  if not ok then
    return {error = "InvalidQuery", message = tostring(page)}
  end
  return {posts = page.records, cursor = page.cursor}
end
