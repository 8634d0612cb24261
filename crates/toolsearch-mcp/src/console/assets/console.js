// The console's one script. Pages work without it when the console is open (loopback, no
// credentials): links and the search form are plain HTML, and a live page refreshes itself.
// With credentials it carries the bearer token, kept in this tab's session storage only, in
// the Authorization header of every page it fetches — the token is never put in a URL or a
// cookie — and it refreshes a live page in place.
(() => {
  'use strict';
  const KEY = 'toolsearch-console-token';
  const token = () => sessionStorage.getItem(KEY);
  let timer = 0;

  async function load(url, push) {
    const headers = {};
    const t = token();
    if (t) headers.Authorization = 'Bearer ' + t;
    let response;
    try {
      response = await fetch(url, { headers, cache: 'no-store', credentials: 'omit' });
    } catch (e) {
      const status = document.getElementById('live');
      if (status) status.textContent = 'the gateway did not answer: ' + e.message;
      return;
    }
    // A token refused (unknown, or not an admin's) is forgotten: the next page asks again.
    if (response.status === 401 || response.status === 403) sessionStorage.removeItem(KEY);
    const doc = new DOMParser().parseFromString(await response.text(), 'text/html');
    document.title = doc.title;
    document.body.replaceWith(doc.body);
    if (push) history.pushState(null, '', url);
    wire();
  }

  function wire() {
    clearInterval(timer);
    const login = document.getElementById('login');
    if (login) {
      login.addEventListener('submit', (e) => {
        e.preventDefault();
        sessionStorage.setItem(KEY, login.elements.token.value);
        load(location.href, false);
      });
    }
    const every = Number(document.body.dataset.refresh || 0);
    if (every > 0) timer = setInterval(() => load(location.href, false), every * 1000);
  }

  document.addEventListener('click', (e) => {
    const a = e.target.closest('a');
    if (!token() || !a || a.origin !== location.origin || !a.pathname.startsWith('/ui/')) return;
    e.preventDefault();
    load(a.href, true);
  });
  document.addEventListener('submit', (e) => {
    const form = e.target;
    if (!token() || form.id === 'login' || form.method.toLowerCase() !== 'get') return;
    e.preventDefault();
    const url = new URL(form.action, location.href);
    url.search = new URLSearchParams(new FormData(form)).toString();
    load(url.href, true);
  });
  window.addEventListener('popstate', () => {
    if (token()) load(location.href, false);
  });
  const start = () => {
    wire();
    if (document.getElementById('login') && token()) load(location.href, false);
  };
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
