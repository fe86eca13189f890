-- A post with its counts: likes and replies come from the link index
-- (db.backlinkCount), so they cost the same at 10 likes or 100,000.
function handle()
  local post = db.get(params.uri)
  if not post then
    return {post = json.null}
  end
  local likes = db.backlinkCount{subject = params.uri, source = "com.example.social.like:subject.uri"}
  local replies = db.backlinkCount{subject = params.uri, source = "com.example.social.post:reply.parent.uri"}
  local recent = db.backlinks{subject = params.uri, source = "com.example.social.like:subject.uri", limit = 5}
  local likedBy = json.array()
  for _, r in ipairs(recent.records) do
    likedBy[#likedBy + 1] = r.did
  end
  return {post = post, likeCount = likes.records, replyCount = replies.records, likedBy = likedBy}
end
