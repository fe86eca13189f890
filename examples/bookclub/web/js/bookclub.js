// The book club's page: the shelf, one book, a search, with the like and
// review counts of each book. It talks to the instance only through the
// client generated from the app's lexicons (client.ts, `appview codegen
// --lang ts`), so a change of a lexicon that breaks the page breaks its
// compilation. The page reads its API client key from web/config.json,
// which the example's server writes.
import { Client, ComExampleBookclubGetBook_NotFoundError, ComExampleBookclubSearchBooks_InvalidQueryError, XRPCError, } from './client.js';
const PAGE = 20;
function byId(id) {
    const e = document.getElementById(id);
    if (e === null)
        throw new Error(`the page has no #${id}`);
    return e;
}
/** el makes an element with a class (when not '') and its children. */
function el(tag, className, ...children) {
    const e = document.createElement(tag);
    if (className !== '')
        e.className = className;
    e.append(...children);
    return e;
}
function link(href, className, text) {
    const a = el('a', className, text);
    a.href = href;
    return a;
}
const bookHref = (uri) => '#/book/' + encodeURIComponent(uri);
const genreHref = (genre) => '#/genre/' + encodeURIComponent(genre);
const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;
function setStatus(text, error = false) {
    const status = byId('status');
    status.textContent = text;
    status.classList.toggle('error', error);
}
function show(view) {
    byId('list').hidden = view !== 'list';
    byId('detail').hidden = view !== 'detail';
}
/** bookItem is a book's line of a list. */
function bookItem(b) {
    const li = el('li', 'book', link(bookHref(b.uri), 'title', b.title), el('span', 'author', b.author));
    if (b.genre !== undefined)
        li.append(link(genreHref(b.genre), 'genre', b.genre));
    li.append(el('span', 'likes', `\u2665 ${b.likeCount}`), el('span', 'meta', plural(b.reviewCount, 'review', 'reviews')));
    li.dataset['uri'] = b.uri;
    return li;
}
function showList(title, books, append, more) {
    show('list');
    byId('list-title').textContent = title;
    const ul = byId('books');
    if (!append)
        ul.replaceChildren();
    ul.append(...books.map(bookItem));
    const button = byId('more');
    button.hidden = more === undefined;
    button.onclick = more === undefined ? null : () => void more();
    setStatus(ul.childElementCount === 0 ? 'No books.' : '');
}
async function listBooks(client, genre, cursor) {
    const out = await client.com.example.bookclub.listBooks({
        limit: PAGE,
        ...(genre !== undefined ? { genre } : {}),
        ...(cursor !== undefined ? { cursor } : {}),
    });
    const title = (genre === undefined ? 'The shelf' : `Genre: ${genre}`) + ` (${plural(out.total, 'book', 'books')})`;
    const next = out.cursor;
    showList(title, out.books, cursor !== undefined, next === undefined ? undefined : () => listBooks(client, genre, next));
}
async function searchBooks(client, q, cursor) {
    try {
        const out = await client.com.example.bookclub.searchBooks({ q, limit: PAGE, ...(cursor !== undefined ? { cursor } : {}) });
        const next = out.cursor;
        showList(`Results for \u201c${q}\u201d`, out.books, cursor !== undefined, next === undefined ? undefined : () => searchBooks(client, q, next));
    }
    catch (e) {
        if (!(e instanceof ComExampleBookclubSearchBooks_InvalidQueryError))
            throw e;
        showList(`Results for \u201c${q}\u201d`, [], false, undefined);
        setStatus(`That search does not parse: ${e.message}`, true);
    }
}
async function showBook(client, uri) {
    try {
        const { book, reviews, likedBy } = await client.com.example.bookclub.getBook({ uri });
        byId('detail-title').textContent = book.title;
        const byline = [`by ${book.author}`];
        if (book.year !== undefined)
            byline.push(`, ${book.year}`);
        if (book.genre !== undefined)
            byline.push(' \u00b7 ', link(genreHref(book.genre), 'genre', book.genre));
        byId('detail-byline').replaceChildren(...byline);
        byId('detail-summary').textContent = book.summary ?? '';
        byId('detail-likes').textContent = `\u2665 ${plural(book.likeCount, 'like', 'likes')}`;
        byId('detail-likers').textContent = likedBy.length > 0 ? `lately from ${likedBy.join(', ')}` : '';
        byId('reviews').replaceChildren(...reviews.map((r) => el('li', 'review', el('span', 'stars', '\u2605'.repeat(r.rating) + '\u2606'.repeat(5 - r.rating)), ' ', el('span', 'text', r.text), ' ', el('span', 'meta', `\u2014 ${r.author}`))));
        if (reviews.length === 0)
            byId('reviews').append(el('li', 'meta', 'No reviews yet.'));
        show('detail');
        setStatus('');
    }
    catch (e) {
        if (!(e instanceof ComExampleBookclubGetBook_NotFoundError))
            throw e;
        show('list');
        setStatus('There is no such book.', true);
    }
}
/** route shows what the location's hash names. */
async function route(client) {
    const [, kind = '', arg = ''] = /^#\/([a-z]*)\/?(.*)$/.exec(location.hash) ?? [];
    const value = decodeURIComponent(arg);
    setStatus('Loading\u2026');
    try {
        switch (kind) {
            case 'book':
                return await showBook(client, value);
            case 'search':
                byId('q').value = value;
                return await searchBooks(client, value);
            case 'genre':
                return await listBooks(client, value);
            default:
                return await listBooks(client, undefined);
        }
    }
    catch (e) {
        setStatus(e instanceof XRPCError ? `The server answered ${e.status}: ${e.message}` : String(e), true);
    }
}
async function main() {
    const res = await fetch('web/config.json');
    if (!res.ok)
        throw new Error(`web/config.json: ${res.status}`);
    const config = (await res.json());
    const client = new Client({ baseUrl: location.origin, clientKey: config.clientKey });
    byId('search').addEventListener('submit', (ev) => {
        ev.preventDefault();
        location.hash = '#/search/' + encodeURIComponent(byId('q').value.trim());
    });
    window.addEventListener('hashchange', () => void route(client));
    await route(client);
}
main().catch((e) => setStatus(`The page could not start: ${String(e)}`, true));
