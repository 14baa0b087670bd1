-- memsearch.compact: compaction reviewed before it is applied, and the buffers it touches.
local M = require('memsearch')
local util = require('memsearch.util')
local notify, str, one_line, err_text = util.notify, util.str, util.one_line, util.err_text

--- "1 daily log", "4 daily logs", "1 summary", "2 summaries".
local function plural(n, one, many)
  return ('%d %s'):format(n, n == 1 and one or (many or (one .. 's')))
end

--- A readable compaction result: "compacted 13 daily logs into 4 summaries (extractive; 9000 -> 3100
--- characters): applied" once applied, "would compact ...: nothing changed (dry run)" for a plan only
--- shown, "compact ..." for a plan under review (`review`: each summary's text follows, so the user sees
--- what will be kept); one line per summary created, per log archived, per lasting fact added to MEMORY.md
--- (its section and source) and per group left as it is (nothing to gain); falls back to listing the plan's fields.
function M.format_compact(plan, review)
  if type(plan) ~= 'table' then
    return 'compact: ' .. str(plan)
  end
  if type(plan.summaries) == 'table' and type(plan.archive) == 'table' then
    local applied = plan.applied == true
    local left = type(plan.left) == 'table' and #plan.left > 0
        and ('\n  left (changed while compacting): ' .. table.concat(plan.left, ', '))
      or ''
    local keep = {} -- logs left as they are: a summary would gain nothing
    for _, u in ipairs(type(plan.nothing_to_gain) == 'table' and plan.nothing_to_gain or {}) do
      local logs = type(u.logs) == 'table' and u.logs or {}
      keep[#keep + 1] = ('  keep %s: nothing to gain (%s of %s characters)'):format(
        table.concat(logs, ', '), str(u.chars_after), str(u.chars_before))
    end
    local kept = #keep > 0 and ('\n' .. table.concat(keep, '\n')) or ''
    if #plan.summaries == 0 and #plan.archive == 0 then
      local note = str(plan.note) ~= '' and str(plan.note) or 'nothing to compact'
      return note .. ': nothing changed' .. kept .. left
    end
    local stats = type(plan.stats) == 'table' and plan.stats or {}
    local before = plan.chars_before ~= nil and plan.chars_before or stats.chars_in
    local after = plan.chars_after ~= nil and plan.chars_after or stats.chars_out
    local what = ('%s into %s (%s; %s -> %s characters)'):format(
      plural(#plan.archive, 'daily log'), plural(#plan.summaries, 'summary', 'summaries'), str(plan.summarizer),
      str(before ~= nil and before or '?'), str(after ~= nil and after or '?'))
    local lines = {
      review and ('compact ' .. what)
        or applied and ('compacted ' .. what .. ': applied')
        or ('would compact ' .. what .. ': nothing changed (dry run)'),
    }
    for _, s in ipairs(plan.summaries) do
      local sources = vim.tbl_map(function(p)
        return vim.fs.basename(str(p))
      end, type(s.sources) == 'table' and s.sources or {})
      lines[#lines + 1] = ('  %s %s <- %s'):format(str(s.action), str(s.path), table.concat(sources, ', '))
    end
    for _, m in ipairs(plan.archive) do
      lines[#lines + 1] = ('  move %s -> %s'):format(str(m.from), str(m.to))
    end
    local promoted = type(plan.promoted) == 'table' and plan.promoted or {}
    for _, p in ipairs(promoted) do -- lasting facts added to MEMORY.md, each with its section and source
      lines[#lines + 1] = ('  promote %s ## %s: %s'):format(str(p.path), str(p.section), str(p.text))
    end
    vim.list_extend(lines, keep)
    if review then
      for _, s in ipairs(plan.summaries) do
        lines[#lines + 1] = ('\n%s:'):format(str(s.path))
        for line in vim.gsplit(str(s.content), '\n', { plain = true }) do
          if line ~= '' and not line:match('^# ') then
            lines[#lines + 1] = '  ' .. line
          end
        end
      end
    end
    return table.concat(lines, '\n') .. left
  end
  local parts = {}
  for key, value in vim.spairs(plan) do
    if type(value) == 'table' then
      parts[#parts + 1] = ('%s: %d'):format(key, vim.tbl_count(value))
    elseif value ~= vim.NIL then
      parts[#parts + 1] = ('%s: %s'):format(key, one_line(value, 80))
    end
  end
  return 'compact: ' .. (#parts > 0 and table.concat(parts, ', ') or 'nothing to do')
end

--- After the server applied a compaction on disk: close the buffers of the logs it moved, reload
--- the open summaries it wrote.
function M._after_compact(root, result)
  for _, m in ipairs(type(result.archive) == 'table' and result.archive or {}) do
    local buf = util.loaded_buf(vim.fs.joinpath(root, str(m.from)))
    if buf and not vim.bo[buf].modified then
      pcall(vim.api.nvim_buf_delete, buf, { force = false })
    end
  end
  for _, s in ipairs(type(result.summaries) == 'table' and result.summaries or {}) do
    util.reload_clean(vim.fs.joinpath(root, str(s.path)))
  end
  for _, p in ipairs(type(result.promoted) == 'table' and result.promoted or {}) do
    util.reload_clean(vim.fs.joinpath(root, str(p.path))) -- MEMORY.md, with the promoted facts
  end
end

--- Compacts old daily logs, reviewed first: asks the server for the plan (a dry run), shows it (files
--- created, logs archived, characters before and after) and asks; on yes the server applies that
--- same plan on disk (it refuses one that changed meanwhile), then the buffers of the moved logs are
--- closed and open summaries reloaded. `dry_run` only shows the plan; `confirm = false` skips the question.
---@param opts? { dry_run?: boolean, older_than_days?: integer, files?: string[], confirm?: boolean }
function M.compact(opts)
  opts = opts or {}
  local arg = {}
  if opts.older_than_days then
    arg.olderThanDays = opts.older_than_days
  end
  if opts.files then
    arg.files = opts.files
  end
  M.exec('memsearch.compact', { vim.tbl_extend('force', arg, { dryRun = true }) }, function(err, plan, client)
    if err then
      return notify('compact failed: ' .. err_text(err), vim.log.levels.ERROR)
    end
    M.last_compact = plan
    if opts.dry_run or type(plan) ~= 'table' or type(plan.archive) ~= 'table' or #plan.archive == 0 then
      return notify(M.format_compact(plan))
    end
    local text = M.format_compact(plan, true) -- the summaries' own text, for the review
    local root = client and client.root_dir or M.find_root() or vim.fn.getcwd()
    local unsaved = {}
    for _, m in ipairs(plan.archive) do
      local buf = util.loaded_buf(vim.fs.joinpath(root, str(m.from)))
      if buf and vim.bo[buf].modified then
        unsaved[#unsaved + 1] = str(m.from)
      end
    end
    if #unsaved > 0 then
      return notify('compact: save these logs first: ' .. table.concat(unsaved, ', '), vim.log.levels.ERROR)
    end
    local function apply()
      M.exec('memsearch.compact', { vim.tbl_extend('force', arg, { planId = plan.plan_id }) }, function(err2, done)
        if err2 then
          return notify('compact failed: ' .. err_text(err2), vim.log.levels.ERROR)
        end
        M.last_compact = done
        if type(done) == 'table' and done.applied == true then
          M._after_compact(root, done)
        end
        notify(M.format_compact(done))
      end)
    end
    if opts.confirm == false then
      return apply()
    end
    local adds = type(plan.promoted) == 'table' and #plan.promoted or 0
    vim.ui.select({ 'Apply', 'Cancel' }, {
      prompt = text .. (adds > 0 and ('\nApply this compaction and the %d MEMORY.md additions? '):format(adds)
        or '\nApply this compaction? '),
      kind = 'memsearch.compact',
    }, function(choice)
      if choice == 'Apply' then
        apply()
      else
        notify('compaction cancelled; nothing changed')
      end
    end)
  end)
end

--- Client-side `memsearch.compact` (code actions): the same review as :Memsearch compact.
function M._compact_command(command)
  local args = type(command.arguments) == 'table' and command.arguments[1] or {}
  args = type(args) == 'table' and args or {}
  M.compact({
    older_than_days = args.olderThanDays,
    files = args.files,
    dry_run = args.dryRun == true,
  })
end
