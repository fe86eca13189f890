-- The posts of a topic, newest first. The app declares a value index on
-- the post's topic field, so this filter reads the index instead of
-- scanning every post; the script is the same with or without it.
function handle()
  return db.query{
    collection = "com.example.social.post",
    filter = {field = "topic", value = params.topic},
    limit = tonumber(params.limit) or 20, cursor = params.cursor,
  }
end
