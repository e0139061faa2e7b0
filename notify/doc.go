// Package notify delivers alert notifications to channels: it routes an
// alert to the channels a task names or whose label match fits it,
// renders a message that says what failed and what to do, and delivers
// it to a signed JSON webhook, a Slack-compatible incoming webhook, an
// SMTP server, or a DingTalk, WeCom or Feishu/Lark chat robot (each in
// its markdown, within its size limit, signed as it documents), with
// retries. It reads no state itself: the agent hands it
// the channels and the failure facts from its state machine.
package notify
