function handle()
  local note = db.get(params.uri)
  if note == nil then
    return {error = "NotFound", message = "no note at " .. params.uri}
  end
  return {note = {uri = note.uri, cid = note.cid, note = note, likes = 3}}
end
