#!/usr/bin/env node
import { notBuiltYet } from './not-built.js';

notBuiltYet('q36-agent', 'the native coding agent');
