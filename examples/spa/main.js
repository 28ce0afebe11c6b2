// The DOM wiring: each form runs one API call and reports it on its status line
// (data-state busy, done or error), which is also what the browser test waits on.
import { askSupport } from './assistant.js'
import { createEcho, watchConnection } from './echo.js'
import { http } from './http.js'

const $ = (id) => document.getElementById(id)

const echo = createEcho(http)
watchConnection(echo, (state) => {
  $('socket-status').textContent = state
})

// Echo's channel names without the private- prefix, as echo.private() and echo.leave() take them.
let userChannel = null
let chatChannel = null

/** Runs `action`, showing its progress on the status element `id`; the action's text is the result. */
async function track(id, action) {
  const status = $(id)
  status.dataset.state = 'busy'
  status.textContent = '...'
  try {
    status.textContent = (await action()) ?? 'done'
    status.dataset.state = 'done'
  } catch (error) {
    status.dataset.state = 'error'
    const answer = error.response ? ` (${error.response.status} ${JSON.stringify(error.response.data)})` : ''
    status.textContent = `${error.message}${answer}`
  }
}

function appendItem(listId, text) {
  const item = document.createElement('li')
  item.textContent = text
  $(listId).append(item)
}

function showUser(data) {
  $('user-name').textContent = data.name
  $('user-email').textContent = data.email
  $('user-credits').textContent = String(data.available_credits)
  $('user-photo').hidden = !data.profile_photo_url
  if (data.profile_photo_url) $('user-photo').src = data.profile_photo_url
  $('login-form').hidden = true
  $('signed-in').hidden = false
  if (!userChannel) {
    userChannel = `App.Models.User.${data.id}`
    // Laravel's broadcast notifications (BroadcastNotificationCreated), e.g. a hold's order status.
    const status = $('notifications-status')
    status.dataset.state = 'busy'
    status.textContent = 'subscribing...'
    echo
      .private(userChannel)
      .notification((notification) => {
        appendItem(
          'notifications',
          `${notification.type}: ${notification.status} ${notification.broker_parent_order_id}`,
        )
      })
      .subscribed(() => {
        status.dataset.state = 'done'
        status.textContent = 'listening'
      })
      .error((error) => {
        status.dataset.state = 'error'
        status.textContent = `could not subscribe: ${error.status ?? error.type ?? error}`
      })
  }
}

function showSignedOut() {
  for (const channel of [userChannel, chatChannel]) {
    if (channel) echo.leave(channel)
  }
  userChannel = null
  chatChannel = null
  $('signed-in').hidden = true
  $('login-form').hidden = false
}

async function loadUser() {
  const { data } = await http.get('/api/user')
  showUser(data)
  return `signed in as ${data.email}`
}

$('login-form').addEventListener('submit', (event) => {
  event.preventDefault()
  void track('login-status', async () => {
    const { data } = await http.post('/api/login', {
      email: $('email').value,
      password: $('password').value,
      remember: $('remember').checked,
    })
    if (data.two_factor) throw new Error('two-factor sign-in is not part of this example')
    return loadUser()
  })
})

$('logout').addEventListener('click', () => {
  void track('logout-status', async () => {
    await http.post('/api/logout')
    showSignedOut()
    return 'signed out'
  })
})

$('photo-input').addEventListener('change', () => {
  const file = $('photo-input').files?.[0]
  if (!file) return
  void track('photo-status', async () => {
    const form = new FormData()
    form.append('photo', file)
    // Axios sends FormData as multipart/form-data with its boundary.
    await http.post('/api/user-profile/profile-photo', form)
    await loadUser()
    return 'uploaded'
  })
})

$('join-form').addEventListener('submit', (event) => {
  event.preventDefault()
  const name = `chat.group.${$('group-id').value}`
  if (chatChannel) echo.leave(chatChannel)
  chatChannel = name
  const status = $('chat-status')
  status.dataset.state = 'busy'
  status.textContent = `joining ${name}...`
  // Echo prefixes the App.Events namespace: this is the server's `App\Events\SocketMessage`
  // (`.listen('.App\\Events\\SocketMessage', ...)` says the same without the namespace).
  echo
    .private(name)
    .listen('SocketMessage', (event) =>
      appendItem('messages', `${event.message.user?.name}: ${event.message.body}`),
    )
    .subscribed(() => {
      status.dataset.state = 'done'
      status.textContent = `joined ${name}`
    })
    .error((error) => {
      status.dataset.state = 'error'
      status.textContent = `could not join ${name}: ${error.status ?? error.type ?? error}`
    })
})

$('message-form').addEventListener('submit', (event) => {
  event.preventDefault()
  void track('message-status', async () => {
    const { data } = await http.post('/api/message', {
      group_id: Number($('group-id').value),
      body: $('message-body').value,
    })
    // Not appended here: other tabs get it over the socket, and this one is left out (X-Socket-Id).
    return `sent #${data.data.id}`
  })
})

$('hold-form').addEventListener('submit', (event) => {
  event.preventDefault()
  void track('hold-status', async () => {
    const amount = $('hold-amount').value
    const { data } = await http.post('/api/credit-holds', {
      broker_parent_order_id: $('hold-order').value,
      ...(amount ? { credits_amount: Number(amount) } : {}),
    })
    return `hold #${data.id} ${data.status}`
  })
})

$('assistant-form').addEventListener('submit', (event) => {
  event.preventDefault()
  $('assistant-answer').textContent = ''
  void track('assistant-status', async () => {
    await askSupport($('assistant-question').value, (text) => {
      $('assistant-answer').textContent = text
    })
    return 'answered'
  })
})

// On load: a live session (or a remembered device) shows the user; 401 shows the sign-in form.
void track('session-status', async () => {
  try {
    return await loadUser()
  } catch (error) {
    if (error.response?.status !== 401) throw error
    showSignedOut()
    return 'signed out (401)'
  }
})
