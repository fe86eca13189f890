-- Who follows an account: follows link to the account's DID at "subject".
function handle()
  local page = db.backlinks{
    subject = params.actor, source = "com.example.social.follow:subject",
    limit = tonumber(params.limit) or 50, cursor = params.cursor,
  }
  local followers = json.array()
  for _, r in ipairs(page.records) do
    followers[#followers + 1] = r.did
  end
  return {followers = followers, total = page.total, cursor = page.cursor}
end
