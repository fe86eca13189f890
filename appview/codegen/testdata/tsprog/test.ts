// A program that calls a live Lexview instance through the generated
// TypeScript client (appview/codegen's TestTypeScriptClientLive compiles
// it with tsc --strict and runs it in Node). It reads the instance from
// the environment and exits non-zero, listing what failed, when an
// answer is not the expected one.
import {
  Client,
  type ComExampleNotesCreateNote_Input,
  ComExampleNotesCreateNote_TextTooLongError,
  ComExampleNotesGetNote_NotFoundError,
  XRPCError,
  isComExampleNotesDefs_Image,
} from './client.js'

declare const process: { env: { [name: string]: string | undefined }; exit(code: number): never }

const failures: string[] = []
function check(ok: boolean, what: string): boolean {
  if (!ok) failures.push(what)
  return ok
}
function env(name: string): string {
  return process.env[name] ?? ''
}

async function caught(p: Promise<unknown>): Promise<unknown> {
  try {
    await p
  } catch (e) {
    return e
  }
  return undefined
}

async function main(): Promise<void> {
  const client = new Client({ baseUrl: env('BASE_URL'), clientKey: env('CLIENT_KEY') })
  const want = env('NOTES').split(',')
  const imageNote = env('IMAGE_NOTE')
  const missing = env('MISSING_NOTE')
  const notes = client.com.example.notes

  // The default list, two records a page.
  const got: string[] = []
  let pages = 0
  for await (const page of notes.listNotesPages({ limit: 2 })) {
    pages++
    for (const r of page.records) {
      got.push(r.uri)
      check(r.cid !== '' && r.$type === 'com.example.notes.note' && r.text !== '', `listNotes record ${JSON.stringify(r)}`)
    }
  }
  check(JSON.stringify(got) === JSON.stringify(want), `listNotes: ${got}, want ${want}`)
  check(pages === Math.ceil(want.length / 2), `listNotes: ${pages} pages`)

  // One record of the default get, with its union member and blob.
  const one = await notes.listNotesRecord(imageNote)
  check(one.record.uri === imageNote && one.record.cid !== '', `listNotesRecord: ${JSON.stringify(one)}`)
  const embed = one.record.embed
  if (check(isComExampleNotesDefs_Image(embed), `embed: ${JSON.stringify(embed)}`) && isComExampleNotesDefs_Image(embed)) {
    const blob = embed.image
    check(blob.mimeType === 'image/png' && (blob.url ?? '').startsWith('https://pds.alice.test/xrpc/com.atproto.sync.getBlob?'), `blob: ${JSON.stringify(blob)}`)
  }
  check(one.record.visibility === 'public' && one.record.tags?.[0] === 'go', `record: ${JSON.stringify(one.record)}`)

  // A default get of nothing: 404.
  const e404 = await caught(notes.listNotesRecord(missing))
  check(e404 instanceof XRPCError && e404.status === 404 && e404.error === 'record not found', `missing record: ${e404}`)

  // A scripted query with a declared output and errors.
  const note = await notes.getNote({ uri: imageNote })
  check(note.note.likes === 3 && note.note.uri === imageNote && note.note.note.text !== '', `getNote: ${JSON.stringify(note)}`)
  const eNF = await caught(notes.getNote({ uri: missing }))
  check(eNF instanceof ComExampleNotesGetNote_NotFoundError && eNF.message === 'no note at ' + missing, `getNote of nothing: ${eNF}`)
  check(eNF instanceof XRPCError && eNF.error === 'NotFound', `getNote of nothing as an XRPCError: ${eNF}`)

  // A scripted query that pages with its own cursor.
  const found: string[] = []
  for await (const page of notes.searchNotesPages({ tag: 'go', limit: 2 })) {
    for (const n of page.notes) found.push(n.uri)
  }
  check(JSON.stringify(found) === JSON.stringify(want), `searchNotes: ${found}, want ${want}`)

  // A procedure, signed by the auth hook with the proofs the test made.
  const proofs = env('PROOFS').split(',')
  const signed = new Client({
    baseUrl: env('BASE_URL'),
    clientKey: env('CLIENT_KEY'),
    auth: (req) => {
      const proof = proofs.shift()
      if (proof === undefined) throw new Error('no proof left')
      req.headers.set('Authorization', 'DPoP ' + env('ACCESS_TOKEN'))
      req.headers.set('DPoP', proof)
    },
  })
  const eLong = await caught(signed.com.example.notes.createNote({ text: 'far too long a note' }))
  check(eLong instanceof ComExampleNotesCreateNote_TextTooLongError && eLong.status === 200, `createNote too long: ${eLong}`)
  const input: ComExampleNotesCreateNote_Input = {
    text: 'short',
    embed: { $type: 'com.example.notes.defs#link', uri: 'https://example.com' },
  }
  const out = await signed.com.example.notes.createNote(input)
  check(out.ok && out.caller === env('CALLER'), `createNote: ${JSON.stringify(out)}`)

  // Lexview's default procedure: the note written to the caller's PDS.
  const put = await signed.com.example.notes.putNote({ text: 'written', createdAt: '2026-04-01T00:00:00Z' })
  if (check(put.uri.startsWith('at://' + env('CALLER') + '/com.example.notes.note/') && put.cid !== '', `putNote: ${JSON.stringify(put)}`)) {
    const written = await notes.listNotesRecord(put.uri)
    check(written.record.text === 'written' && written.record.cid === put.cid, `the note written: ${JSON.stringify(written)}`)
  }
}

main().then(
  () => {
    if (failures.length > 0) {
      console.log(failures.join('\n'))
      process.exit(1)
    }
    console.log('ok')
  },
  (e: unknown) => {
    console.log('failed: ' + String(e))
    process.exit(1)
  },
)
