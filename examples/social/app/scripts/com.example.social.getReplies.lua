-- The direct replies to a post, newest first: the link index finds the
-- posts whose reply.parent.uri is the post, db.get reads each.
function handle()
  local page = db.backlinks{
    subject = params.uri, source = "com.example.social.post:reply.parent.uri",
    limit = tonumber(params.limit) or 20, cursor = params.cursor,
  }
  local replies = json.array()
  for _, r in ipairs(page.records) do
    local post = db.get(r.uri)
    if post then
      replies[#replies + 1] = post
    end
  end
  return {replies = replies, total = page.total, cursor = page.cursor}
end
