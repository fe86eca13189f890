-- The notes, newest first, of one tag when params.tag is given.
function handle()
  local q = {collection = "com.example.note", limit = tonumber(params.limit) or 20}
  if params.tag then
    q.filter = {field = "tag", value = params.tag}
  end
  local page = db.query(q)
  return {notes = page.records, greeting = vars.GREETING}
end
